"""The SSE decoder: the event-stream format of the HTML standard, whatever the chunking."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit.llms.openai._sse import ServerEvent, SSEDecoder


def decode(*chunks: bytes) -> list[ServerEvent]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.close()


def data_of(*chunks: bytes) -> list[str]:
    return [event.data for event in decode(*chunks)]


def test_the_standards_examples() -> None:
    assert data_of(b"data: YHOO\ndata: +2\ndata: 10\n\n") == ["YHOO\n+2\n10"]
    assert data_of(b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n") == [
        "first event",
        "second event",
    ]
    # An event of empty data, one of a single newline; the unended last one is kept here.
    assert data_of(b"data\n\ndata\ndata\n\ndata:") == ["", "\n", ""]
    assert data_of(b"data:test\n\ndata: test\n\n") == ["test", "test"]


def test_only_one_space_after_the_colon_is_dropped() -> None:
    assert data_of(b"data:  two spaces\n\n") == [" two spaces"]


def test_event_types_apply_to_their_event_only() -> None:
    events = decode(b"event: error\ndata: a\n\ndata: b\n\nevent: ping\n\ndata: c\n\n")
    assert [(e.type, e.data) for e in events] == [
        ("error", "a"),
        ("message", "b"),
        ("message", "c"),
    ]


def test_line_endings_are_crlf_lf_or_cr_and_nothing_else() -> None:
    body = "data: one\u2028two\x85three\x0cfour\r\n\r\ndata: five\r\rdata: six\n\n".encode()
    assert data_of(body) == ["one\u2028two\x85three\x0cfour", "five", "six"]


def test_a_bom_is_skipped_once_and_bad_utf8_is_replaced() -> None:
    assert data_of(b"\xef\xbb\xbfdata: a\xff\n\n\xef\xbb\xbfdata: b\n\n") == ["a\ufffd"]
    assert data_of(b"\xef", b"\xbb", b"\xbfdata: a\n\n") == ["a"]


def test_json_events_ended_by_one_newline_are_told_apart() -> None:
    body = b'data: {"a": 1}\ndata: {"b": 2}\ndata: [DONE]\n'
    assert data_of(body) == ['{"a": 1}', '{"b": 2}', "[DONE]"]
    # JSON over several data lines is still one event.
    assert data_of(b'data: {"a":\ndata: 1}\n\n') == ['{"a":\n1}']


def test_a_long_line_in_many_pieces_is_one_line() -> None:
    text = "x" * 100_000
    pieces = [f"data: {text}".encode()[i : i + 7] for i in range(0, len(text) + 6, 7)]
    assert data_of(*pieces, b"\n\n") == [text]


EVENT = st.sampled_from(
    [
        b'data: {"choices": [{"delta": {"content": "h\xc3\xa9\xf0\x9f\x98\x80"}}]}\n\n',
        b'data: {"a":\ndata: 1}\n\n',
        b"data: [DONE]\n\n",
        b": comment\r\n",
        b"event: error\rdata: x\r\r",
        b"id: 3\nretry: 10\n\n",
        b'data:{"b": 2}\n',
        b"\r\n",
    ]
)


@settings(deadline=None)
@given(st.lists(EVENT, max_size=8).map(b"".join), st.lists(st.integers(0, 400), max_size=6))
def test_any_chunking_gives_the_same_events(body: bytes, cuts: list[int]) -> None:
    body = b"\xef\xbb\xbf" + body
    points = sorted({min(cut, len(body)) for cut in cuts})
    chunks = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    assert decode(*chunks) == decode(body)
    assert decode(*(body[i : i + 1] for i in range(len(body)))) == decode(body)
    for event in decode(body):
        assert "\r" not in event.data
        if event.data.startswith("{"):
            json.loads(event.data)
