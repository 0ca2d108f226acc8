"""What a session learns from its transport beyond the messages: that the server closed the
connection, and the HTTP error status a server's endpoint answered with.

Imported only when a session starts: it imports the `mcp` package.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from http import HTTPStatus
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import httpx2
from mcp import MCPError
from mcp import types as mcp_types
from mcp.client import Transport
from mcp.shared.message import SessionMessage

if TYPE_CHECKING:  # the SDK exports the transport protocol, not the types of its streams
    from mcp.client._transport import ReadStream, TransportStreams

logger = logging.getLogger("chainkit.mcp")

# How the SDK reports an HTTP error status it got instead of a JSON-RPC answer: the status
# itself is not in the error, so `HTTPStatusLog` keeps it.
_STATUS_STAND_INS = {
    (mcp_types.INTERNAL_ERROR, "Server returned an error response"),
    (mcp_types.METHOD_NOT_FOUND, "Not Found"),
    (mcp_types.INVALID_REQUEST, "Session terminated"),
}

Item = SessionMessage | Exception


class _WatchedReadStream:
    """A transport's read stream that calls `on_end` once when the server's side ends."""

    def __init__(self, stream: ReadStream[Item], on_end: Callable[[], None]) -> None:
        self._stream = stream
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        """The sender's context, where the wrapped stream keeps one (the SDK looks for it)."""
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> Item:
        try:
            return await self._stream.receive()
        except Exception:  # EndOfStream, or the stream closed under the reader
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self._stream.__anext__()
        except (StopAsyncIteration, Exception):
            self._on_end()
            raise

    async def __aenter__(self) -> Self:
        await self._stream.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        return await self._stream.__aexit__(exc_type, exc, traceback)


@asynccontextmanager
async def watched(
    transport: Transport, on_end: Callable[[], None]
) -> AsyncIterator[TransportStreams]:
    """`transport`, calling `on_end` when the server closes the connection."""
    async with transport as (read_stream, write_stream):
        yield _WatchedReadStream(read_stream, on_end), write_stream


class HTTPStatusLog:
    """The last HTTP error status the server's endpoint answered with, to explain the error the
    SDK makes of it; `hook` goes in the HTTP client's response event hooks."""

    def __init__(self) -> None:
        self.last: int | None = None

    async def hook(self, response: httpx2.Response) -> None:
        if response.status_code >= 400 and response.request.method == "POST":
            self.last = response.status_code

    def explain(self, error: BaseException) -> str | None:
        """What the HTTP status behind `error` means, with a hint; None for another error."""
        if not isinstance(error, MCPError) or self.last is None:
            return None
        if (error.code, error.message) not in _STATUS_STAND_INS:
            return None
        return status_hint(self.last)


def status_hint(status: int) -> str:
    """`HTTP 401 Unauthorized`, with what to check for the statuses a setup error gives."""
    try:
        phrase = f"HTTP {status} {HTTPStatus(status).phrase}"
    except ValueError:
        phrase = f"HTTP {status}"
    if status in (401, 403):
        return f"{phrase}: check the headers= given to MCPTools, e.g. Authorization"
    if status == 404:
        return f"{phrase}: check the URL and its path, often /mcp"
    return phrase
