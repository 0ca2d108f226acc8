"""An event sent in many `data:` lines is decoded in time linear in its size: whether the
lines so far are already a whole JSON value (so a further `data:` line starts a new event) is
decided reading each line once, not by parsing all of them again at every line (counted in
characters handed to the JSON parser, never timed); and it is decided as before for any lines,
whatever the chunking of the bytes."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit.llms.openai import _sse
from chainkit.llms.openai._sse import SSEDecoder
from tests.support.counting import characters_handed

DONE = "[DONE]"


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the characters handed to `json.loads` (the decoder's, and this test's own)."""
    return characters_handed(monkeypatch, json, "loads")


def feed_all(body: bytes) -> list[_sse.ServerEvent]:
    decoder = SSEDecoder()
    return [*decoder.feed(body), *decoder.close()]


def test_an_event_in_thousands_of_data_lines_is_parsed_once(parsed: list[int]) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "x" * 10}}] * 2000}
    lines = json.dumps(chunk, indent=1).split("\n")  # a server that pretty-prints its events
    body = "".join(f"data: {line}\n" for line in lines) + "\ndata: [DONE]\n\n"
    events = feed_all(body.encode())
    assert [json.loads(e.data) for e in events[:1]] == [chunk]
    assert events[1].data == DONE
    size = len(events[0].data)
    assert parsed[0] - 2 * size <= size  # the loads above, and at most one more


def test_text_in_many_data_lines_is_not_parsed_again_and_again(parsed: list[int]) -> None:
    body = "".join(f"data: line {n} of a plain text event\n" for n in range(3000)) + "\n"
    [event] = feed_all(body.encode())
    assert event.data.count("\n") == 2999
    assert parsed[0] <= 2 * len("line 0 of a plain text event\n")


def old_is_whole(data: str) -> bool:
    """How the decoder decided before: the lines joined and parsed at every line."""
    if data.strip() == DONE:
        return True
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True


def json_lines(value: object) -> list[str]:
    return json.dumps(value, indent=1, ensure_ascii=False).split("\n")


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab"\\[]{}é😀 ', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
_LINES = st.lists(
    st.one_of(
        _VALUES.map(json_lines),
        st.lists(
            st.sampled_from(
                ["{", "}", "[", "]", '"a":', '"b\\"', '"', "\\", "1", ",", "", "  ", DONE, "x"]
            ),
            min_size=1,
            max_size=3,
        ),
    ),
    max_size=5,
).map(lambda groups: [line for group in groups for line in group])


@settings(max_examples=500, deadline=None)
@given(_LINES)
def test_whole_data_is_decided_as_it_was(lines: list[str]) -> None:
    whole = _sse._WholeData()
    for end in range(1, len(lines) + 1):
        assert whole.of(lines[:end]) == old_is_whole("\n".join(lines[:end])), lines[:end]


@settings(max_examples=200, deadline=None)
@given(_LINES, st.lists(st.integers(min_value=0, max_value=10_000), max_size=20))
def test_events_split_where_they_did_whatever_the_chunking(
    lines: list[str], cuts: list[int]
) -> None:
    body = "".join(f"data: {line}\n" for line in lines).encode()
    offsets = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    decoder = SSEDecoder()
    events = [e for a, b in itertools.pairwise(offsets) for e in decoder.feed(body[a:b])]
    events += decoder.close()
    expected: list[str] = []
    data: list[str] = []
    for line in lines:
        if data and old_is_whole("\n".join(data)):
            expected.append("\n".join(data))
            data = []
        data.append(line)
    if data:
        expected.append("\n".join(data))
    assert [e.data for e in events] == expected
