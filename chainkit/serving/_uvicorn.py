"""How uvicorn runs a served app so that hostile clients cannot hold it: `uvicorn_options`
gives the keyword arguments of `uvicorn.Config` that `chainkit serve` (and anyone running
`create_app`'s app under uvicorn) should use.

Neither of uvicorn's HTTP parsers bounds a request head: h11 refuses one over its limit only
when the head arrives in pieces (a 100 KB head read at once is parsed whole), httptools not at
all. So the protocol is pinned to h11, subclassed to refuse with 431 a head over
MAX_HEAD_BYTES however it arrives, and to close connections that hold the server without a
request in flight: one that sends its request head a byte at a time, or nothing at all, is
closed `head_timeout_seconds` after it opened or after its last response, whatever it sends
meanwhile (uvicorn's own keep-alive timer restarts at every byte it gets). A request framed
both by Content-Length and as chunked is the connection's last."""

from __future__ import annotations

import asyncio
import functools
import json
from typing import TYPE_CHECKING, Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

if TYPE_CHECKING:
    from chainkit.serving.settings import ServerSettings

MAX_HEAD_BYTES = 64 * 1024
"""A request head (request line and headers) over this is refused with 431 and the connection
closed: real clients send a few KB."""
_HEAD_END = b"\r\n\r\n"
_TOO_LARGE = json.dumps(
    {
        "error": {
            "code": "head_too_large",
            "message": f"the request head is over {MAX_HEAD_BYTES} bytes",
        }
    }
).encode()
_REFUSAL = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_TOO_LARGE), _TOO_LARGE)
)


def uvicorn_options(settings: ServerSettings) -> dict[str, Any]:
    """The `uvicorn.Config` keyword arguments that bound what a client can hold of a server
    serving with `settings`: the request head's size and time, connections at once (uvicorn
    answers 503 past `max_connections`), and idle keep-alive."""
    return {
        "http": functools.partial(GuardedH11, head_timeout=settings.head_timeout_seconds),
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
        "limit_concurrency": settings.max_connections,
        "timeout_keep_alive": 5,
        "server_header": False,
    }


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol, which also refuses a request head over MAX_HEAD_BYTES (431,
    closed) and closes a connection that has no request in flight `head_timeout` seconds after
    it opened or after its last response."""

    def __init__(self, *args: Any, head_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timeout = head_timeout
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._last_bytes = b""

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE and self._head_too_large(data):
            self.transport.write(_REFUSAL)
            self.transport.close()
            return
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._head_bytes, self._last_bytes = 0, b""

    def handle_events(self) -> None:
        started = self.cycle
        super().handle_events()
        if self.cycle is not started and self.cycle is not None and _framed_twice(self.cycle):
            # Both a length and chunks: read as chunked (as h11 does), but a front proxy may
            # have read it by its length, so nothing more is taken from this connection
            # (RFC 9112 6.3: a request smuggled behind it would be answered otherwise).
            self.cycle.keep_alive = False

    def _head_too_large(self, data: bytes) -> bool:
        """Whether the head being received, with `data`, is over MAX_HEAD_BYTES: counted
        without copying what came before (its last bytes kept, for an end split by a read)."""
        if self._head_bytes + len(data) <= MAX_HEAD_BYTES:
            self._head_bytes += len(data)
            self._last_bytes = (self._last_bytes + data)[-len(_HEAD_END) :]
            return False
        end = (self._last_bytes + data).find(_HEAD_END)
        return end == -1 or self._head_bytes - len(self._last_bytes) + end > MAX_HEAD_BYTES

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        self._stop_waiting()
        if not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self._head_timeout, self._head_late)

    def _stop_waiting(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        # A request whose head came in time is the app's (its body has its own timeout).
        in_flight = self.cycle is not None and not self.cycle.response_complete
        if not in_flight and not self.transport.is_closing():
            self.transport.close()


def _framed_twice(cycle: RequestResponseCycle) -> bool:
    names = {name for name, _ in cycle.scope["headers"]}
    return b"content-length" in names and b"transfer-encoding" in names
