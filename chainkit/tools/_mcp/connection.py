"""One MCP session on its own event loop: connect, list the tools, call them, follow changes.

The MCP client's anyio cancel scopes must be entered and exited by the same task, so one task,
`Session.run`, owns the session from connecting to closing. Tool calls, refreshes and the
list-change subscription run as other tasks on the same loop; MCPTools reaches them from any
thread or event loop through `asyncio.run_coroutine_threadsafe`.

Imported only when a session starts: it imports the `mcp` package.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextlib import AsyncExitStack
from typing import Any, TextIO

import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp import types as mcp_types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from chainkit import __version__
from chainkit._redact import redact
from chainkit._text import shorten
from chainkit.tools._mcp.content import result_text
from chainkit.tools._mcp.endpoint import Endpoint
from chainkit.tools._mcp.tool import MCPTool
from chainkit.tools._mcp.transport import HTTPStatusLog, watched
from chainkit.tools.errors import MCPSessionError, MCPToolError

logger = logging.getLogger("chainkit.mcp")


class _SDKTracebacks(logging.Filter):
    """Keeps the tracebacks the SDK's transports log off the user's stderr: the session reports
    what went wrong itself (a stray line once, a closed connection on the call). They go to the
    `chainkit.mcp` logger at DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info is None:
            return True
        logger.debug("%s: %s", record.name, record.getMessage(), exc_info=record.exc_info)
        return False


for _sdk_logger in ("mcp.client.stdio", "mcp.client.streamable_http"):
    logging.getLogger(_sdk_logger).addFilter(_SDKTracebacks())

# A server that pages its tool list forever must not hang a connect or a refresh.
_MAX_PAGES = 100
_STDERR_LINES = 20
_STDERR_LINE_CHARS = 500
_STRAY_OUTPUT_CHARS = 200
# How long to wait, after a server has died, for the last lines of its stderr.
_STDERR_DRAIN_SECONDS = 0.5
# The SDK says "Connection closed" as soon as a write fails, maybe before the transport has
# ended; this long, the transport gets to say whether it has (the server's own -32000 errors
# with other messages are not waited for).
_SDK_CLOSED = "Connection closed"
_TRANSPORT_END_SECONDS = 1.0
# The SDK's own HTTP read timeout: a server may hold a response stream open for long.
_HTTP_READ_TIMEOUT = 300.0
_HTTP_CONNECT_TIMEOUT = 30.0
# Servers close idle connections after a few seconds (uvicorn and node after 5 s, gunicorn after
# 2 s). A request sent on one just as the server closes it is reset, and the SDK then ends the
# whole session, so an idle connection is dropped here well before any server drops it.
_HTTP_KEEPALIVE_SECONDS = 1.0

ToolsListener = Callable[[str, Sequence[mcp_types.Tool]], None]


class ServerLog:
    """A stdio server's stderr: each line is logged at DEBUG on the `chainkit.mcp` logger, and
    the last few are kept for error messages."""

    def __init__(self, label: str) -> None:
        read_fd, write_fd = os.pipe()
        # Handed to the server process as its stderr; ours is closed once the process has it.
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self._label = label
        self._lines: deque[str] = deque(maxlen=_STDERR_LINES)
        self._lock = threading.Lock()
        self._reader = threading.Thread(
            target=self._read, args=(read_fd,), name=f"chainkit-mcp stderr {label}", daemon=True
        )
        self._reader.start()

    def _read(self, read_fd: int) -> None:
        with open(read_fd, encoding="utf-8", errors="replace") as stream:
            for line in stream:
                text = line.rstrip("\r\n")
                logger.debug("%s stderr: %s", self._label, text)
                with self._lock:
                    self._lines.append(shorten(text, _STDERR_LINE_CHARS))

    def close_writer(self) -> None:
        self.writer.close()

    def ended(self) -> bool:
        """Whether the server has closed its stderr: it has exited, most often."""
        return not self._reader.is_alive()

    def drain(self) -> None:
        """Waits a moment for the last lines of a server that has exited."""
        self._reader.join(_STDERR_DRAIN_SECONDS)

    def tail(self) -> str:
        """The last lines, keys masked, as a suffix for an error message; '' when there are none."""
        with self._lock:
            lines = [line for line in self._lines if line.strip()]
        if not lines:
            return ""
        quoted = "\n".join(f"  {line}" for line in lines)
        return redact(f"\nThe server's stderr ends with:\n{quoted}")


class Session:
    """The session with one MCP server; every coroutine here runs on the session's loop."""

    def __init__(self, endpoint: Endpoint, name: str | None, on_tools: ToolsListener) -> None:
        self.endpoint = endpoint
        self.server_name = name or endpoint.short_name
        self._named = name is not None
        self._on_tools = on_tools
        self.log = ServerLog(str(endpoint)) if endpoint.command is not None else None
        self.http_status = HTTPStatusLog()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stopping: asyncio.Event | None = None
        self._refresh: asyncio.Task[None] | None = None
        self._refresh_again = False
        self._stray_output: str | None = None
        self._stray_reported = False
        self._close_requested = False
        self.server_closed = False
        self._server_gone: asyncio.Event | None = None
        self.ended_by: BaseException | None = None

    async def run(self, ready: Future[None]) -> None:
        """Connects, lists the tools, resolves `ready`, and holds the session until `stop`.

        A failure to connect resolves `ready` with the error; one after that ends the session,
        and `ended_by` says why."""
        self.loop = asyncio.get_running_loop()
        self._owner = asyncio.current_task()
        self._stopping = asyncio.Event()
        self._server_gone = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                try:
                    self._client = await stack.enter_async_context(await self._connect(stack))
                finally:
                    if self.log is not None:
                        self.log.close_writer()
                client = self._client
                if not self._named and client.server_info and client.server_info.name:
                    self.server_name = client.server_info.name
                self._on_tools(self.server_name, await self._list_tools())
                listener = self._follow_changes(client)
                _settle(ready, None)
                await self._stopping.wait()
                helpers = [task for task in (listener, self._refresh) if task is not None]
                for task in helpers:
                    task.cancel()
                # Done before the client closes: the subscription is left by its own task.
                await asyncio.gather(*helpers, return_exceptions=True)
        except BaseException as error:  # the session's end, whatever it was, is reported
            self.ended_by = error
            if self.log is not None and not ready.done():
                self.log.drain()
            _settle(ready, error)
        finally:
            self._client = None

    def stop(self) -> None:
        """Ends the session: leaves it when connected, else abandons the connect. Any thread."""
        loop = self.loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop has ended: so has the session
            loop.call_soon_threadsafe(self._stop)

    def _stop(self) -> None:
        self._close_requested = True
        if self._client is not None and self._stopping is not None:
            self._stopping.set()
        elif self._owner is not None:
            self._owner.cancel()

    async def call(self, tool: MCPTool, arguments: dict[str, Any]) -> str:
        """The observation of one tool call; MCPToolError for every way it can fail."""
        client = self._client
        if client is None:
            raise self.closed_error(tool)
        try:
            result = await client.call_tool(tool.remote_name, arguments)
        except MCPError as error:
            if error.code == mcp_types.CONNECTION_CLOSED and error.message == _SDK_CLOSED:
                await self._transport_end()
            raise _tool_error(tool, self._refusal(tool, error)) from None
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "result"
            raise _tool_error(
                tool,
                f"MCP server {self.server_name!r} answered the call to {tool.name} with a "
                f"malformed result ({where}: {first['msg']})",
            ) from error
        except Exception as error:
            raise _tool_error(
                tool,
                f"the call to {tool.name} on MCP server {self.server_name!r} failed: "
                f"{type(error).__name__}: {error}",
            ) from error
        text = result_text(result)
        if result.is_error:
            raise _tool_error(tool, text or f"{tool.name} failed and gave no message")
        return text

    async def refresh(self) -> None:
        """Lists the tools again and hands the list to `on_tools`."""
        if self._client is None:
            raise MCPSessionError(f"the session with MCP server {self.server_name!r} is closed")
        self._on_tools(self.server_name, await self._list_tools())

    def closed_error(self, tool: MCPTool, *, sent: bool = False) -> MCPToolError:
        """The error for a call the session ended before (or, `sent`, during)."""
        reason = self.end_reason()
        outcome = "got no answer" if sent else "was not called"
        return _tool_error(
            tool,
            f"the session with MCP server {self.server_name!r} has ended"
            f"{f' ({reason})' if reason else ''}; {tool.name} {outcome}",
        )

    def end_reason(self) -> str:
        """Why the session ended, when the server ended it; '' when it was closed here."""
        if self.server_closed:
            return self._how_server_closed()
        ended_by = None if self.ended_by is None else _first_leaf(self.ended_by)
        if ended_by is None or isinstance(ended_by, asyncio.CancelledError):
            return ""
        cause = f"{type(ended_by).__name__}: {ended_by}"
        if isinstance(ended_by, httpx2.TransportError):
            return f"the server cannot be reached, {cause}"
        return cause

    def timeout_error(self, tool: MCPTool, timeout: float) -> MCPToolError:
        return _tool_error(
            tool,
            f"MCP server {self.server_name!r} did not answer the call to {tool.name} within "
            f"{timeout:g} s",
        )

    def start_error(self, cause: BaseException | None, timeout: float) -> str:
        """Why the session could not start, for MCPConnectionError."""
        where = f"MCP server {self.endpoint}"
        if cause is None:
            return f"{where} did not finish starting within {timeout:g} s{self._hints()}"
        cause = _first_leaf(cause)
        status = self.http_status.explain(cause)
        if status is not None:
            return f"{where} answered {status}"
        if isinstance(cause, MCPError) and cause.code == mcp_types.CONNECTION_CLOSED:
            return f"{where} closed the connection while starting (did it exit?){self._hints()}"
        if isinstance(cause, httpx2.TransportError):
            return f"could not connect to {where}: {type(cause).__name__}: {cause}"
        if isinstance(cause, OSError) and self.endpoint.command is not None:
            return f"could not start {where}: {cause}"
        return f"{where} failed to start: {type(cause).__name__}: {cause}{self._hints()}"

    async def _connect(self, stack: AsyncExitStack) -> Client:
        endpoint = self.endpoint
        if endpoint.command is not None:
            assert self.log is not None
            program, *args = endpoint.command
            parameters = StdioServerParameters(
                command=program, args=args, env=endpoint.env, cwd=endpoint.cwd
            )
            transport = watched(stdio_client(parameters, errlog=self.log.writer), self._closed)
        else:
            assert endpoint.url is not None
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=endpoint.headers,
                    timeout=httpx2.Timeout(_HTTP_CONNECT_TIMEOUT, read=_HTTP_READ_TIMEOUT),
                    limits=httpx2.Limits(keepalive_expiry=_HTTP_KEEPALIVE_SECONDS),
                    event_hooks={"response": [self.http_status.hook]},
                )
            )
            transport = watched(
                streamable_http_client(endpoint.url, http_client=http), self._closed
            )
        return Client(
            transport,
            message_handler=self._on_message,
            client_info=mcp_types.Implementation(name="chainkit", version=__version__),
            # Each list must be the server's current one: a cached list would hide changes.
            cache=None,
        )

    def _closed(self) -> None:
        """The server closed the connection: the session ends, and says why on the next call."""
        if self._close_requested or self.server_closed:
            return
        self.server_closed = True
        if self._server_gone is not None:
            self._server_gone.set()
        logger.debug("%s: %s", self.server_name, self._how_server_closed())
        if self._stopping is not None:
            self._stopping.set()

    async def _transport_end(self) -> None:
        """Waits a moment for the transport to end, after the SDK said the connection closed."""
        if self._server_gone is None or self._close_requested:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._server_gone.wait(), _TRANSPORT_END_SECONDS)

    def _how_server_closed(self) -> str:
        if self.log is not None and self.log.ended():
            return "the server exited"
        return "the server closed the connection"

    async def _list_tools(self) -> list[mcp_types.Tool]:
        assert self._client is not None
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await self._client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools
        raise MCPSessionError(
            f"MCP server {self.server_name!r} lists its tools in more than {_MAX_PAGES} pages"
        )

    def _follow_changes(self, client: Client) -> asyncio.Task[None] | None:
        """Subscribes to tool list changes where the protocol version needs a subscription.

        Servers of earlier versions send `notifications/tools/list_changed` unasked; either way
        `_on_message` hears them."""
        capabilities = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return None
        if capabilities is None or not capabilities.list_changed:
            return None
        return asyncio.create_task(self._listen(client))

    async def _listen(self, client: Client) -> None:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    pass  # each change reaches _on_message too, which refreshes
        except Exception as error:
            logger.debug("%s: tool list changes not followed: %s", self.server_name, error)

    async def _on_message(self, message: object) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._refresh_soon()
        elif isinstance(message, ValidationError):
            # A line on the server's stdout that is not JSON-RPC: a stray print, most often.
            self._stray_line(str(next((e.get("input") for e in message.errors()), "")))

    def _stray_line(self, text: str) -> None:
        """Reports the first line that is not MCP as a warning, where it happens; later ones
        at DEBUG. It is kept to explain a server that then fails to start."""
        line = redact(shorten(text, _STRAY_OUTPUT_CHARS))
        self._stray_output = line
        if self._stray_reported:
            logger.debug("MCP server %s wrote a line that is not MCP: %r", self.server_name, line)
            return
        self._stray_reported = True
        # Before the handshake the server has no name yet: its command says which.
        who = self.server_name if self._client is not None else str(self.endpoint)
        logger.warning(
            "MCP server %r wrote a line on stdout that is not MCP, ignored: %r "
            "(later ones are logged at DEBUG)",
            who,
            line,
        )

    def _refresh_soon(self) -> None:
        """One refresh at a time; a change heard during one makes it list once more."""
        if self._refresh is not None and not self._refresh.done():
            self._refresh_again = True
            return
        self._refresh = asyncio.create_task(self._refresh_until_current())

    async def _refresh_until_current(self) -> None:
        while True:
            self._refresh_again = False
            try:
                await self.refresh()
            except Exception as error:
                logger.warning("%s: could not refresh the tool list: %s", self.server_name, error)
            if not self._refresh_again:
                return

    def _refusal(self, tool: MCPTool, error: MCPError) -> str:
        """What an MCP error answering a call means. Only the transport ending tells that the
        connection closed: a server may answer with any code, CONNECTION_CLOSED's included."""
        closed = error.code == mcp_types.CONNECTION_CLOSED
        if closed and self._close_requested:
            return (
                f"the session with MCP server {self.server_name!r} was closed during the call "
                f"to {tool.name}"
            )
        if closed and self.server_closed:
            if self.log is not None:
                self.log.drain()
            return (
                f"MCP server {self.server_name!r} closed the connection "
                f"({self._how_server_closed()}); {tool.name} got no answer{self._stderr()}"
            )
        status = self.http_status.explain(error)
        if status is not None:
            return f"MCP server {self.server_name!r} answered the call to {tool.name} with {status}"
        return (
            f"MCP server {self.server_name!r} refused the call to {tool.name}: {error.message} "
            f"(error {error.code})"
        )

    def _hints(self) -> str:
        """What the server wrote that may explain why it did not start: output that is not
        MCP, and the end of its stderr."""
        hints = ""
        if self._stray_output is not None:
            hints = f"\nIt wrote output that is not MCP: {self._stray_output!r}"
        return hints + self._stderr()

    def _stderr(self) -> str:
        return "" if self.log is None else self.log.tail()


def _tool_error(tool: MCPTool, message: str) -> MCPToolError:
    return MCPToolError(message, server=tool.server, tool=tool.name)


def _first_leaf(error: BaseException) -> BaseException:
    """The first exception inside nested exception groups: anyio wraps a task's failure."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _settle(future: Future[None], outcome: BaseException | None) -> None:
    """Resolves `future` unless a caller has already given up on it."""
    if future.done():
        return
    try:
        if outcome is None:
            future.set_result(None)
        else:
            future.set_exception(outcome)
    except Exception:  # InvalidStateError: cancelled by the waiting caller just now
        logger.debug("a connect outcome arrived after its caller stopped waiting")
