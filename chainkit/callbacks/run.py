"""Runs: every chain call, model call and tool call is a run, with an id and a parent.

The innermost run and the handlers that hear it live in context variables, so they follow
the work into asyncio tasks (which copy the context) and into threads started with
`contextvars.copy_context().run` (chainkit's own worker threads and pools do). `enter` is
the one place a run begins, whatever its kind; handlers read the run an event belongs to with
`current_run()` instead of taking it as an argument.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, Literal

from chainkit.callbacks.combining import CombiningHandler, join

RunKind = Literal["chain", "llm", "tool", "retriever"]


class RunInfo:
    """One run: `id`, the `parent_id` of the run it happens inside (None for a root), its
    `kind`, its `name` (chain, model or tool name) and `start_time` (seconds since the epoch).

    The id is written out when first read: a run no one asks about costs no formatting.
    """

    __slots__ = ("_id", "_number", "_prefix", "kind", "name", "parent", "start_time")

    def __init__(
        self,
        prefix: str,
        number: int,
        parent: RunInfo | None,
        kind: RunKind,
        name: str,
        start_time: float,
    ) -> None:
        self._prefix = prefix
        self._number = number
        self._id: str | None = None
        self.parent = parent
        self.kind: RunKind = kind
        self.name = name
        self.start_time = start_time

    @property
    def id(self) -> str:
        if self._id is None:
            self._id = f"{self._prefix}{self._number:06x}"
        return self._id

    @property
    def parent_id(self) -> str | None:
        return None if self.parent is None else self.parent.id

    def __repr__(self) -> str:
        return (
            f"RunInfo(id={self.id!r}, parent_id={self.parent_id!r}, kind={self.kind!r}, "
            f"name={self.name!r})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunInfo) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)


_current_run: ContextVar[RunInfo | None] = ContextVar("chainkit_run", default=None)
_active_handler: ContextVar[CombiningHandler | None] = ContextVar("chainkit_handler", default=None)


def current_run() -> RunInfo | None:
    """The innermost run of the calling context; None outside any run."""
    return _current_run.get()


def active_handler() -> CombiningHandler | None:
    """The handler that hears the events of the calling context; None when nobody listens."""
    return _active_handler.get()


class _Ids:
    """Run ids unique across processes: a random per-process prefix and a counter.

    A uuid4 per run would cost more than the rest of a tool step; the prefix is drawn again
    in a forked child, so a fork never repeats its parent's ids.
    """

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self.prefix = os.urandom(6).hex() + "-"
        self.counter = itertools.count(1)


_ids = _Ids()


class Run:
    """An entered run: its `info`, and the `handler` (None when nobody listens) that hears its
    events and those of the runs inside it.

    Use it as a context manager: leaving it restores the outer run and handler, and an
    exception leaving it is reported as the run's error event, unless `end` or `fail`
    reported the run already. So every run whose start was reported gets exactly one end or
    error event, on every path.
    """

    __slots__ = ("_handler_token", "_run_token", "ended", "handler", "info")

    def __init__(
        self, info: RunInfo, handler: CombiningHandler | None, outer: CombiningHandler | None
    ) -> None:
        self.info = info
        self.handler = handler
        self.ended = False
        self._run_token: Token[RunInfo | None] = _current_run.set(info)
        self._handler_token: Token[CombiningHandler | None] | None = (
            None if handler is outer else _active_handler.set(handler)
        )

    def __enter__(self) -> Run:
        return self

    def __exit__(
        self,
        error_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if error is not None and not self.ended:
                self.fail(error)
        finally:
            if self._handler_token is not None:
                _active_handler.reset(self._handler_token)
            _current_run.reset(self._run_token)
        # Returns None: an error leaving the run goes on.

    def end(self, result: Any) -> None:
        """Reports the run's end with its result: outputs, reply message, tool output or the
        documents (tools) a retriever found."""
        self.ended = True
        handler = self.handler
        if handler is None:
            return
        kind = self.info.kind
        if kind == "llm":
            handler.handle_llm_end(result)
        elif kind == "chain":
            handler.handle_chain_end(self.info.name, result)
        elif kind == "tool":
            handler.handle_tool_end(self.info.name, result)
        else:
            handler.handle_retriever_end(self.info.name, result)

    def fail(self, error: BaseException) -> None:
        """Reports the run's error; for a failure that does not propagate (a tool error that
        becomes an observation), as for one that does."""
        self.ended = True
        handler = self.handler
        if handler is None:
            return
        kind = self.info.kind
        if kind == "llm":
            handler.handle_llm_error(error)
        elif kind == "chain":
            handler.handle_chain_error(self.info.name, error)
        elif kind == "tool":
            handler.handle_tool_error(self.info.name, error)
        else:
            handler.handle_retriever_error(self.info.name, error)


def enter(kind: RunKind, name: str, own: CombiningHandler | None = None) -> Run:
    """Begins a run of `kind` named `name` inside the current one. Its handler is the one
    active here joined with `own` (a component's handler, or a call's `callbacks=`), and stays
    active for the runs inside it."""
    info = RunInfo(_ids.prefix, next(_ids.counter), _current_run.get(), kind, name, time.time())
    outer = _active_handler.get()
    return Run(info, outer if own is None else join(outer, own), outer)


@contextmanager
def handled_by(handler: CombiningHandler | None) -> Iterator[None]:
    """Makes `handler` the active one for what starts inside, in place of the current one
    (which it must hold): for a wrapper that filters a step's events, such as the executor's
    at a deadline."""
    token = _active_handler.set(handler)
    try:
        yield
    finally:
        _active_handler.reset(token)


@contextmanager
def reporting_for(info: RunInfo) -> Iterator[None]:
    """Makes `info` the current run while an event of that run is reported from elsewhere, so
    that `current_run()` is right in the handler (an abandoned call's error, say)."""
    token = _current_run.set(info)
    try:
        yield
    finally:
        _current_run.reset(token)
