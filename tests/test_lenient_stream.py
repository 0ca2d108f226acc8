"""chainkit/_jsonschema/lenient: a reply's object read as it streams, each character once;
escapes cut anywhere (a surrogate pair split between chunks included); fences and prose
that come before the object."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainkit._jsonschema.lenient import JSONTextError, ObjectStream, find_object, partial_object

VALUES = st.dictionaries(
    st.text(max_size=5),
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
        max_leaves=8,
    ),
    max_size=4,
)


def fed(text: str, cuts: list[int]) -> ObjectStream:
    stream = ObjectStream()
    start = 0
    for cut in sorted({min(cut, len(text)) for cut in cuts} | {len(text)}):
        stream.feed(text[start:cut])
        start = cut
    return stream


@given(VALUES, st.booleans(), st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_a_reply_fed_in_any_pieces_reads_as_each_prefix_does(
    value: dict[str, Any], ascii_only: bool, cuts: list[int]
) -> None:
    text = "Sure:\n```json\n" + json.dumps(value, ensure_ascii=ascii_only) + "\n```"
    stream = ObjectStream()
    start = 0
    for cut in sorted({min(cut, len(text)) for cut in cuts}):
        stream.feed(text[start:cut])
        start = cut
        assert stream.partial() == partial_object(text[:cut])
    stream.feed(text[start:])
    assert stream.whole() == value == find_object(text)


def test_each_character_is_read_once() -> None:
    note = "caf\u00e9 \\u00e9 \U0001f600"
    items = [{"name": f"item {i}", "note": note, "n": i} for i in range(2000)]
    text = json.dumps({"items": items})
    stream = fed(text, list(range(0, len(text), 4)))
    assert stream.whole() == {"items": items}
    # Only an escape cut off at the end of a piece is read again, with the next piece.
    assert len(text) <= stream.chars_read <= len(text) + 11 * (len(text) // 4 + 1)
    assert stream.chars_read < 2 * len(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"s": "\\ud83d\\ude00 ok"}',  # a surrogate pair as two escapes
        '{"s": "\\ud83d\\ude00"}',
    ],
)
def test_a_surrogate_pair_cut_anywhere_is_never_shown_half(text: str) -> None:
    for cut in range(len(text) + 1):
        stream = ObjectStream()
        stream.feed(text[:cut])
        shown = str((stream.partial() or {}).get("s", ""))
        stream.feed(text[cut:])
        assert all(not "\ud800" <= char <= "\udfff" for char in shown)
        assert shown in "\U0001f600 ok"
        assert str(stream.whole()["s"]).startswith("\U0001f600")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"s": "a\\ud83dx"}', "a\ufffdx"),  # a high half alone
        ('{"s": "\\ude00b"}', "\ufffdb"),  # a low half alone
        ('{"s": "\\ud83d\\u0041"}', "\ufffdA"),  # a high half before another escape
        ('{"s": "\\ud83d"}', "\ufffd"),
    ],
)
def test_a_lone_surrogate_escape_reads_as_the_replacement_character(
    text: str, expected: str
) -> None:
    assert find_object(text) == {"s": expected}


def test_a_cut_off_surrogate_half_is_held_back_until_the_text_ends() -> None:
    assert partial_object('{"s": "a\\ud83d') == {"s": "a"}
    assert partial_object('{"s": "a\\ud83d\\') == {"s": "a"}
    assert partial_object('{"s": "a\\ud83d\\ude') == {"s": "a"}
    assert partial_object('{"s": "a\\ud83d\\n') == {"s": "a\ufffd\n"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A first fence that holds no JSON.
        ('Run:\n```bash\nls -l\n```\nResult:\n```json\n{"a": 1}\n```', {"a": 1}),
        # One that holds braces that are no JSON.
        ('```sh\necho ${HOME}\n```\n```json\n{"a": 1}\n```', {"a": 1}),
        # An empty fence, then the object bare.
        ('```\n```\n{"a": 2}', {"a": 2}),
        # A fence inside the object's own strings (pretty-printed: real newlines follow).
        ('{\n  "code": "```python\\nprint(1)\\n```",\n  "lang": "py"\n}', None),
        # Tildes, four backticks, a fence opened on the object's own line.
        ('~~~json\n{"a": 3}\n~~~', {"a": 3}),
        ('````json\n{"a": 4}\n````', {"a": 4}),
        ('```{"a": 5}```', {"a": 5}),
    ],
)
def test_fences_before_or_inside_the_object_do_not_hide_it(
    text: str, expected: dict[str, Any] | None
) -> None:
    if expected is None:
        expected = {"code": "```python\nprint(1)\n```", "lang": "py"}
    assert find_object(text) == expected
    assert partial_object(text) == expected


def test_a_reply_with_no_object_says_why() -> None:
    with pytest.raises(JSONTextError, match="has no"):
        ObjectStream().whole()
    stream = fed('```json\n{"a": nope}\n```', [5, 12])
    assert stream.partial() is None
    with pytest.raises(JSONTextError, match="unexpected 'nope'"):
        stream.whole()


def test_a_word_that_can_be_no_literal_fails_at_once_not_when_it_ends() -> None:
    stream = ObjectStream()
    stream.feed('{"a": 1, "b": nu')
    assert stream.partial() == {"a": 1}
    stream.feed("llx")
    assert stream.partial() is None  # "nullx" is nothing: the object fails here
    stream.feed("y" * 100_000)  # read once, for a `{` that may begin another object
    assert stream.chars_read <= len('{"a": 1, "b": nullx') + 100_000
    with pytest.raises(JSONTextError, match="unexpected 'nullx'"):
        stream.whole()


def read_by_stream(text: str) -> dict[str, object] | str:
    """What ObjectStream reads in `text`, or its error's message."""
    stream = ObjectStream()
    stream.feed(text)
    try:
        return stream.whole()
    except JSONTextError as error:
        return str(error)


def read_by_find_object(text: str) -> dict[str, object] | str:
    try:
        return find_object(text)
    except JSONTextError as error:
        return str(error)


@given(VALUES, st.booleans(), st.sampled_from(["", " ", "\n\t"]))
def test_an_object_alone_reads_as_the_stream_reads_it(
    value: dict[str, Any], ascii_only: bool, space: str
) -> None:
    text = space + json.dumps(value, ensure_ascii=ascii_only) + space
    assert find_object(text) == read_by_stream(text) == value


DEEP = '{"a": ' + "[" * 250 + "]" * 250 + "}"


@pytest.mark.parametrize(
    "text",
    [
        '{"a": NaN}',  # json.loads reads these constants; a model's JSON has none
        '{"a": Infinity}',
        '{"a": [1, -Infinity]}',
        '{"s": "a\\ud83dx"}',  # a lone surrogate: json.loads keeps it as it is
        '{"s": "\\ude00"}',
        DEEP,  # nested deeper than the stream reads
        '{"a": "tab\there"}',  # a control character json.loads refuses
        '{"a": 1,}',
        '{"a": 1} and then some',
        '{"n": ' + "1" * 5000 + "}",  # a number too long for int()
    ],
)
def test_what_json_loads_reads_otherwise_reads_as_the_stream_reads_it(text: str) -> None:
    assert read_by_find_object(text) == read_by_stream(text)
