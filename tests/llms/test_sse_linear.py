"""A streamed body is read in time linear in its size. For an event sent in many `data:`
lines, whether the lines so far are already a whole JSON value (so a further `data:` line
starts a new event) is decided reading each line once, not by parsing all of them again at
every line (counted in characters handed to the JSON parser, never timed), and decided as
before for any lines, whatever the chunking of the bytes. Likewise the blank bytes a body may
begin with are looked at once, not again with each new byte, to tell events from one JSON
document."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit.llms.openai import _reply, _sse
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


# Before its first event, a body may send blank lines (a server keeping the connection alive),
# and only its first byte that is not blank says whether it is events or one JSON document.
_BLANK_THEN = st.tuples(
    st.booleans(),
    st.lists(st.sampled_from([b" ", b"\n", b"\r\n", b"\t"]), max_size=30).map(b"".join),
    st.sampled_from([b'{"choices": []}', b"data: [DONE]\n\n", b": ping\n\ndata: [DONE]\n\n"]),
)


def old_sniff(body: bytes) -> bool | None:
    """How the body's kind was decided before: all its bytes so far looked at again."""
    if len(body) < 3 and b"\xef\xbb\xbf".startswith(body):
        return None
    start = body.removeprefix(b"\xef\xbb\xbf").lstrip()
    return None if not start else start[0] in b"{["


def sniffed(chunks: list[bytes]) -> list[bool | None]:
    """What a stream decides of its body's kind after each chunk, as long as it is unsure."""
    stream = _reply.StreamAccumulator(lambda text: None, lambda text: text)
    verdicts: list[bool | None] = []
    for chunk in chunks:
        stream.feed(chunk)
        verdicts.append(None if stream._sniffing else stream._body is not None)
        if verdicts[-1] is not None:
            break
    return verdicts


@settings(max_examples=300, deadline=None)
@given(_BLANK_THEN, st.lists(st.integers(min_value=0, max_value=200), max_size=20))
def test_a_body_is_told_json_or_events_as_it_was(
    start: tuple[bool, bytes, bytes], cuts: list[int]
) -> None:
    bom, blanks, rest = start
    body = (b"\xef\xbb\xbf" if bom else b"") + blanks + rest
    offsets = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    chunks = [body[a:b] for a, b in itertools.pairwise(offsets)]
    expected = [old_sniff(body[:end]) for end in offsets[1:]]
    verdicts = sniffed(chunks)
    assert verdicts == expected[: len(verdicts)]


def test_blank_bytes_before_the_first_event_are_looked_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handed = characters_handed(monkeypatch, _reply, "_looks_like_json")
    assert sniffed([b"\n"] * 20_000 + [b"data: [DONE]\n\n"]) == [None] * 20_000 + [False]
    assert handed[0] <= 20_000 + len("data: [DONE]\n\n") + 3
