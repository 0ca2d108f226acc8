"""A stream's events that a run hands over together go out in one write (one chunk of the
chunked body), the same events as one per write would give."""

from __future__ import annotations

from chainkit import chains
from chainkit._cli.agent import builtin_agent
from chainkit.serving import ServerSettings, create_app
from tests.support.serving import RawStream, served, sse_events


def chunks_of(body: bytes) -> list[bytes]:
    """The chunks of a chunked HTTP body, in order (the last, empty one left out)."""
    chunks: list[bytes] = []
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return chunks
        chunks.append(body[:size])
        body = body[size + 2 :]


def test_events_handed_over_together_go_out_in_one_write() -> None:
    settings = ServerSettings(no_auth=True)
    with served(create_app(builtin_agent(), settings)) as url:
        stream = RawStream(url, "/stream", {"input": "what is 6 * 7?"}, {})
        try:
            response = stream.read_until(b"\r\n0\r\n\r\n")
        finally:
            stream.close()
    _, _, body = response.partition(b"\r\n\r\n")
    chunks = chunks_of(body)
    events = sse_events(b"".join(chunks))
    expected = [event.kind for event in chains.stream(builtin_agent(), "what is 6 * 7?")]
    assert [name for name, _ in events] == expected
    assert len(chunks) < len(events)
