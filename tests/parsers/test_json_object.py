"""parsers.JSONParser: the first JSON object of a reply, read tolerantly; streamed, the object
so far each time it grows, each character read once."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainkit import parsers
from chainkit._jsonschema.lenient import ObjectStream
from tests.parsers.streaming import CUTS, by_character, partials, pieces

OBJECTS = st.dictionaries(
    st.text(max_size=5),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
        max_leaves=6,
    ),
    max_size=4,
)


@pytest.mark.parametrize(
    "text",
    [
        '{"city": "Paris", "people": 2}',
        'Sure! Here it is:\n```json\n{"city": "Paris", "people": 2,}\n```\nAnything else?',
        '  {"city": "Paris",\n "people": 2 }  ',
    ],
)
def test_the_object_is_found_in_prose_fences_and_with_trailing_commas(text: str) -> None:
    assert parsers.JSONParser().parse(text) == {"city": "Paris", "people": 2}


@pytest.mark.parametrize(
    ("text", "shown", "detail"),
    [
        ("", "an empty reply", "no JSON object in the reply"),
        ("I cannot help", "'I cannot help'", "it has no '{'"),
        ('{"city": "Par', '\'{"city": "Par\'', "cut off"),
    ],
)
def test_a_reply_without_an_object_names_what_was_expected_and_got(
    text: str, shown: str, detail: str
) -> None:
    with pytest.raises(parsers.ParseError) as raised:
        parsers.JSONParser().parse(text)
    message = str(raised.value)
    assert message.startswith(f"JSONParser expected a JSON object, got {shown} (")
    assert detail in message
    assert raised.value.expected == "a JSON object" and raised.value.text == text
    assert isinstance(raised.value, ValueError)


def test_a_long_reply_is_shortened_in_the_message_and_kept_whole_in_the_error() -> None:
    text = "no json here " * 1_000
    with pytest.raises(parsers.ParseError) as raised:
        parsers.JSONParser().parse(text)
    assert len(str(raised.value)) < 300 and raised.value.text == text


def test_streamed_each_partial_is_the_object_so_far() -> None:
    text = 'Here: {"name": "Ana", "tags": ["a", "b"]} done'
    assert partials(parsers.JSONParser(), by_character(text)) == [
        {"name": ""},
        {"name": "A"},
        {"name": "An"},
        {"name": "Ana"},
        {"name": "Ana", "tags": []},
        {"name": "Ana", "tags": [""]},
        {"name": "Ana", "tags": ["a"]},
        {"name": "Ana", "tags": ["a", ""]},
        {"name": "Ana", "tags": ["a", "b"]},
    ]


@given(OBJECTS, CUTS)
def test_any_cutting_ends_with_the_parsed_object(value: dict[str, Any], cuts: list[int]) -> None:
    text = "Sure:\n```json\n" + json.dumps(value, ensure_ascii=False) + "\n```\nBye {"
    found = partials(parsers.JSONParser(), pieces(text, cuts))
    assert found[-1] == parsers.JSONParser().parse(text) == value
    assert all(earlier != later for earlier, later in itertools.pairwise(found))


@pytest.mark.parametrize(
    "text",
    [
        '{"s": "a\\ud83dx"}',  # a lone surrogate escape: no text holds one
        '{"a": ' + "[" * 300 + "]" * 300 + "}",  # nested deeper than the reader goes
        '{"a": NaN}',
    ],
)
def test_an_object_alone_parses_as_its_stream_ends(text: str) -> None:
    """A reply that is one object, read whole, gives what reading it streamed gives."""
    streamed = partials(parsers.JSONParser(), [text])
    try:
        parsed = parsers.JSONParser().parse(text)
    except parsers.ParseError:
        assert streamed == []
    else:
        assert streamed == [parsed]


def test_a_huge_object_streams_in_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    copied = [0]
    partial = ObjectStream.partial

    def counted(stream: ObjectStream) -> Any:
        copied[0] += stream.copy_cost + 1
        return partial(stream)

    monkeypatch.setattr(ObjectStream, "partial", counted)
    items = [{"n": n, "text": "x" * 20} for n in range(20_000)]
    text = json.dumps({"items": items})
    reader = parsers.JSONParser().reader()
    found = []
    for start in range(0, len(text), 3):
        found += reader.feed(text[start : start + 3])
    assert found[-1] == {"items": items}
    # Making a partial at each chunk would copy ~20,000 members ~200,000 times.
    assert copied[0] <= 40 * len(text)
    assert reader._stream.chars_read == len(text)


def test_the_reader_hands_on_nothing_after_the_object() -> None:
    reader = parsers.JSONParser().reader()
    assert reader.feed('{"a": 1}') == [{"a": 1}]
    assert reader.feed(' and {"b": 2}') == []


def test_instructions_ask_for_one_object() -> None:
    assert "one JSON object" in parsers.JSONParser().instructions()
    assert parsers.JSONParser().output_type == dict[str, Any]
