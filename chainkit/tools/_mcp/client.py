"""MCPTools: an MCP server's tools as chainkit tools, in sync code, threads or async code.

Each MCPTools runs its session on an event loop of its own, in a background thread, so sync
callers need no event loop and async callers' loops are never blocked: every call crosses to
the session's loop with `asyncio.run_coroutine_threadsafe` and waits there at most `timeout`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Collection, Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError, Future
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar

from chainkit.tools._mcp.approval import approval_marks
from chainkit.tools._mcp.endpoint import check_timeout, endpoint
from chainkit.tools._mcp.tool import MCPTool
from chainkit.tools.base import Tool
from chainkit.tools.errors import MCPConnectionError as MCPConnectionError
from chainkit.tools.errors import (
    MCPNotInstalledError,
    MCPSessionError,
    MCPTimeoutError,
    MCPToolError,
    ToolConfigError,
    ToolTypeError,
)

if TYPE_CHECKING:
    from mcp import types as mcp_types

    from chainkit.tools._mcp.connection import Session

logger = logging.getLogger("chainkit.mcp")

# A stdio server gets 2 s to exit after its stdin closes, then 2 s after SIGTERM (the SDK's
# shutdown); past this, closing stops waiting and the session thread finishes on its own.
_CLOSE_SECONDS = 10.0

_T = TypeVar("_T")


class MCPTools:
    """The tools of one MCP server, while the session is open.

    `MCPTools(command=["python", "server.py"], env=None, cwd=None)` starts a server and talks to
    it over stdio; the process gets only a few safe variables of this environment (PATH, HOME,
    ...) plus `env`. `MCPTools(url="http://127.0.0.1:8000/mcp", headers=None)` connects over
    streamable HTTP.

    Use it as a context manager, `with` or `async with`: entering connects, initialises and lists
    the tools (MCPConnectionError when that fails or takes over `connect_timeout` seconds);
    iterating it, or `.tools`, gives them as chainkit Tools; leaving closes the session and
    stops the server process. Each call waits at most `timeout` seconds, then fails with
    MCPToolError (a ToolError: the model is told). When the server announces that its tools
    changed, the list is fetched again; `refresh()` does it on demand.

    `prefix` is put before every tool name, to tell apart servers with tools of the same name.
    `name` names the server in errors and on its tools (`tool.server`); by default, the name
    the server gives itself. `tools.join_tools(a, b)` joins the tools of several servers.

    `requires_approval` marks tools whose calls a person approves (an Executor's `approve=`):
    True for all, a set of tool names as the server lists them (without `prefix`; a name the
    server does not list fails the connect with ToolConfigError), or a function given the
    tool's name and the call's arguments dict that says whether this call needs approval.
    """

    def __init__(
        self,
        command: Sequence[str] | None = None,
        *,
        url: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 60.0,
        prefix: str = "",
        name: str | None = None,
        requires_approval: bool | Collection[str] | Callable[[str, Any], bool] = False,
    ) -> None:
        self._endpoint = endpoint(command, url, env, cwd, headers)
        self._requires_approval = approval_marks(requires_approval)
        self.timeout = check_timeout(timeout)
        self.connect_timeout = check_timeout(connect_timeout)
        if not isinstance(prefix, str):
            raise ToolTypeError(f"prefix must be a string, got {type(prefix).__name__}")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ToolConfigError(f"name must be a non-empty string, got {name!r}")
        self.prefix = prefix
        self._name = name
        self._lock = threading.Lock()
        self._state: Literal["new", "connecting", "open", "closed"] = "new"
        self._session: Session | None = None
        self._finished: Future[None] | None = None
        # Work sent to the session's loop and not done yet: what the loop leaves undone when
        # it ends is cancelled then, so no caller waits on a loop that has gone.
        self._pending: dict[Future[Any], Coroutine[Any, Any, Any]] = {}
        self._tools: list[Tool] = []

    def __repr__(self) -> str:
        state: str = self._state
        if state == "open" and self._finished is not None and self._finished.done():
            state = "ended"  # the server went away
            reason = "" if self._session is None else self._session.end_reason()
            state += f": {reason}" if reason else ""
        return f"MCPTools({str(self._endpoint)!r}, {state})"

    @property
    def server(self) -> str:
        """The server's name: `name=`, else what the server calls itself once connected."""
        if self._session is not None:
            return self._session.server_name
        return self._name or self._endpoint.short_name

    @property
    def tools(self) -> list[Tool]:
        """The server's tools as last listed."""
        if self._state != "open":
            raise MCPSessionError(
                f"{self!r} is not open: use its tools inside `with MCPTools(...) as tools:` "
                "or `async with`"
            )
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    def __enter__(self) -> Self:
        ready = self._start()
        try:
            ready.result(self.connect_timeout)
        except Exception:
            raise self._start_failed(ready)  # noqa: B904 - it sets the cause: the server's error
        except BaseException:
            self._closing()  # without waiting: it may be stuck starting
            raise
        self._opened()
        unlisted = self._unlisted_error()
        if unlisted is not None:
            self.close()
            raise unlisted
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        ready = self._start()
        try:
            await asyncio.wait_for(asyncio.wrap_future(ready), self.connect_timeout)
        except Exception:
            raise self._start_failed(ready)  # noqa: B904 - it sets the cause: the server's error
        except BaseException:
            self._closing()  # without waiting: it may be stuck starting
            raise
        self._opened()
        unlisted = self._unlisted_error()
        if unlisted is not None:
            await self.aclose()
            raise unlisted
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def close(self) -> None:
        """Closes the session and stops a stdio server; waits for that up to 10 seconds."""
        finished = self._closing()
        if finished is None:
            return
        try:
            finished.result(_CLOSE_SECONDS)
        except TimeoutError:
            logger.warning("%s: still closing after %g s; not waiting", self.server, _CLOSE_SECONDS)

    async def aclose(self) -> None:
        """`close` for async code: waits without blocking the event loop."""
        finished = self._closing()
        if finished is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(finished)), _CLOSE_SECONDS)
        except TimeoutError:
            logger.warning("%s: still closing after %g s; not waiting", self.server, _CLOSE_SECONDS)

    def refresh(self) -> list[Tool]:
        """Lists the server's tools again, and returns them."""
        _, future = self._submit(lambda session: session.refresh(), self._not_open)
        try:
            future.result(self.timeout)
        except TimeoutError:
            future.cancel()
            raise self._refresh_timeout() from None
        return self.tools

    async def arefresh(self) -> list[Tool]:
        """`refresh` for async code."""
        _, future = self._submit(lambda session: session.refresh(), self._not_open)
        try:
            await asyncio.wait_for(asyncio.wrap_future(future), self.timeout)
        except TimeoutError:
            raise self._refresh_timeout() from None
        return self.tools

    def _call_tool(self, tool: MCPTool, arguments: dict[str, Any]) -> str:
        session, future = self._submit(
            lambda s: s.call(tool, arguments), lambda: self._closed_error(tool)
        )
        try:
            return future.result(self.timeout)
        except TimeoutError:
            future.cancel()  # tells the server the call is abandoned
            raise session.timeout_error(tool, self.timeout) from None
        except CancelledError:
            raise session.closed_error(tool, sent=True) from None

    async def _acall_tool(self, tool: MCPTool, arguments: dict[str, Any]) -> str:
        session, future = self._submit(
            lambda s: s.call(tool, arguments), lambda: self._closed_error(tool)
        )
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self.timeout)
        except TimeoutError:
            raise session.timeout_error(tool, self.timeout) from None
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the caller was cancelled, not the call
            raise session.closed_error(tool, sent=True) from None

    def _start(self) -> Future[None]:
        with self._lock:
            if self._state != "new":
                raise MCPSessionError(
                    f"{self!r} was opened before; make a new MCPTools to reconnect"
                )
            self._state = "connecting"
        try:
            from chainkit.tools._mcp.connection import Session
        except ModuleNotFoundError as error:
            self._state = "closed"
            if (error.name or "").partition(".")[0] in ("mcp", "httpx2"):
                raise MCPNotInstalledError(
                    "MCPTools needs the mcp package (2.x): pip install 'chainkit[mcp]'",
                    name=error.name,
                ) from error
            raise
        session = Session(self._endpoint, self._name, self._publish)
        ready: Future[None] = Future()
        finished: Future[None] = Future()
        self._session, self._finished = session, finished
        threading.Thread(
            target=self._hold_session,
            args=(session, ready, finished),
            name=f"chainkit-mcp {self._endpoint}",
            daemon=True,
        ).start()
        return ready

    def _opened(self) -> None:
        with self._lock:
            if self._state == "connecting":
                self._state = "open"

    def _unlisted_error(self) -> ToolConfigError | None:
        """The error for names `requires_approval` marks that the server does not list: a
        misspelt name must not leave a tool unguarded."""
        listed = [tool.remote_name for tool in self._tools if isinstance(tool, MCPTool)]
        unlisted = self._requires_approval.unlisted(listed)
        if not unlisted:
            return None
        return ToolConfigError(
            f"requires_approval names {', '.join(map(repr, unlisted))}, which MCP server "
            f"{self.server!r} does not list; it lists {', '.join(listed) or 'no tool'}"
        )

    def _start_failed(self, ready: Future[None]) -> MCPConnectionError:
        """The error for a connect that failed or timed out; the session is abandoned."""
        session = self._session
        assert session is not None
        cause = ready.exception() if ready.done() and not ready.cancelled() else None
        self._closing()  # without waiting: it may be stuck starting
        error = MCPConnectionError(session.start_error(cause, self.connect_timeout))
        error.__cause__ = cause
        error.__suppress_context__ = True  # our wait timing out, or the cause again
        return error

    def _closing(self) -> Future[None] | None:
        """Stops the session (or its connecting); what resolves when its thread is done."""
        with self._lock:
            self._state = "closed"
        if self._session is None:
            return None
        self._session.stop()
        return self._finished

    def _publish(self, server: str, listing: Sequence[mcp_types.Tool]) -> None:
        """Makes the server's tool list this MCPTools' tools; runs on the session's loop."""
        tools: list[Tool] = []
        seen: set[str] = set()
        for info in listing:
            if info.name in seen:
                raise ToolConfigError(f"MCP server {server!r} lists the tool {info.name!r} twice")
            seen.add(info.name)
            if _task_only(info):
                logger.info(
                    "%s: %s runs only as a task, which MCPTools does not call", server, info.name
                )
                continue
            tools.append(
                MCPTool(
                    self,
                    server=server,
                    remote_name=info.name,
                    name=self.prefix + info.name,
                    description=info.description or info.title or f"{info.name} ({server})",
                    parameters=info.input_schema,
                    requires_approval=self._requires_approval.mark(info.name),
                )
            )
        self._tools = tools

    def _closed_error(self, tool: MCPTool) -> MCPToolError:
        if self._session is None:
            return MCPToolError(
                f"{tool.name} cannot be called: {self!r} was never opened",
                server=tool.server,
                tool=tool.name,
            )
        return self._session.closed_error(tool)

    def _refresh_timeout(self) -> MCPTimeoutError:
        return MCPTimeoutError(
            f"MCP server {self.server!r} did not list its tools in {self.timeout:g} s"
        )

    def _not_open(self) -> MCPSessionError:
        return MCPSessionError(f"{self!r} is not open")

    def _submit(
        self,
        make: Callable[[Session], Coroutine[Any, Any, _T]],
        closed: Callable[[], Exception],
    ) -> tuple[Session, Future[_T]]:
        """Runs `make(session)` on the session's loop; `closed()` is raised when it has ended."""
        session = self._session
        loop = None if session is None else session.loop
        if self._state != "open" or session is None or loop is None:
            raise closed()
        with self._lock:
            if self._finished is None or self._finished.done():
                raise closed()
            coroutine = make(session)
            try:
                future = asyncio.run_coroutine_threadsafe(coroutine, loop)
            except RuntimeError:  # the loop has closed: the session ended
                coroutine.close()
                raise closed() from None
            self._pending[future] = coroutine
        future.add_done_callback(self._forget)
        return session, future

    def _forget(self, future: Future[Any]) -> None:
        with self._lock:
            self._pending.pop(future, None)

    def _hold_session(self, session: Session, ready: Future[None], finished: Future[None]) -> None:
        """The session thread: runs the session's loop until the session ends."""
        try:
            asyncio.run(session.run(ready))
        finally:
            with self._lock:
                finished.set_result(None)
                left = list(self._pending.items())
                self._pending.clear()
            for future, coroutine in left:
                future.cancel()
                # Never started, or ended with its destroyed task: closing it is safe now.
                with contextlib.suppress(RuntimeError):
                    coroutine.close()


def _task_only(info: mcp_types.Tool) -> bool:
    """Whether the tool must be called as a task (MCP 2025-11-25): a plain call is refused."""
    return info.execution is not None and info.execution.task_support == "required"
