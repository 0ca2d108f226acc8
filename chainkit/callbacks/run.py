"""Runs: every chain call, model call and tool call is a run, with an id and a parent.

The innermost run and the handlers that hear it live in context variables, so they follow
the work into asyncio tasks (which copy the context) and into threads started with
`contextvars.copy_context().run` (chainkit's own worker threads and pools do). `enter` is
the one place a run begins, whatever its kind; handlers read the run an event belongs to with
`current_run()` instead of taking it as an argument. The wish for every model's tokens as
events (`streaming_tokens`, what `chains.stream` sets) is carried the same way.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, get_args

from chainkit.callbacks._events_table import CallbackEvent, ending
from chainkit.callbacks._events_table import RunKind as RunKind  # public here, where runs are
from chainkit.callbacks.combining import CombiningHandler, join
from chainkit.callbacks.errors import HandlerTypeError


class RunInfo:
    """One run: `id`, the `parent_id` of the run it happens inside (None for a root), its
    `kind`, its `name` (chain, model or tool name), `start_time` (seconds since the epoch)
    and, for a tool run, the `tool_call_id` of the model's tool call it carries out (None for
    any other run, and for an action parsed from text, as a OneShotAgent's).

    The id is written out when first read: a run no one asks about costs no formatting.
    """

    __slots__ = (
        "_id",
        "_number",
        "_prefix",
        "kind",
        "name",
        "parent",
        "start_time",
        "tool_call_id",
    )

    def __init__(
        self,
        prefix: str,
        number: int,
        parent: RunInfo | None,
        kind: RunKind,
        name: str,
        start_time: float,
        tool_call_id: str | None = None,
    ) -> None:
        self._prefix = prefix
        self._number = number
        self._id: str | None = None
        self.parent = parent
        self.kind: RunKind = kind
        self.name = name
        self.start_time = start_time
        self.tool_call_id = tool_call_id

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


class Run(RunInfo):
    """An entered run: its `RunInfo`, and the `handler` (None when nobody listens) that hears
    its events and those of the runs inside it. One context variable holds the innermost run,
    and with it the active handler.

    Use it as a context manager: entering makes it the current run, leaving restores the outer
    one, and an exception leaving it is reported as the run's error event, unless `end` or
    `fail` reported the run already. So every run whose start was reported gets exactly one
    end or error event, on every path.
    """

    __slots__ = ("_token", "ended", "handler")
    handler: CombiningHandler | None
    ended: bool

    def __init__(
        self,
        kind: RunKind,
        name: str,
        own: CombiningHandler | None = None,
        tool_call_id: str | None = None,
    ) -> None:
        parent = _current.get()
        handler = None if parent is None else parent.handler
        if own is not None:
            handler = join(handler, own)
        # RunInfo's fields set here, not through its __init__: a run is made for every model
        # and tool call, and this spares each a call.
        self._prefix = _ids.prefix
        self._number = next(_ids.counter)
        self._id = None
        self.parent = parent
        self.kind = kind
        self.name = name
        self.start_time = time.time()
        self.tool_call_id = tool_call_id
        self.handler = handler
        self.ended = False

    def __enter__(self) -> Run:
        self._token: Token[Run | None] = _current.set(self)
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
            _current.reset(self._token)

    def end(self, result: Any) -> None:
        """Reports the run's end with its result: outputs, reply message, tool output or the
        documents (tools) a retriever found. A run with no handler has no one to report to,
        so callers on every step's path skip the call then."""
        self.ended = True
        if self.handler is not None:
            self._report(0, result)

    def fail(self, error: BaseException) -> None:
        """Reports the run's error; for a failure that does not propagate (a tool error that
        becomes an observation), as for one that does."""
        self.ended = True
        if self.handler is not None:
            self._report(1, error)

    def _report(self, which: int, value: Any) -> None:
        event = _ENDINGS[self.kind][which]
        if event.run_name is None:
            getattr(self.handler, event.method)(value)
        elif event.call_id is None:
            getattr(self.handler, event.method)(self.name, value)
        else:
            getattr(self.handler, event.method)(self.name, value, self.tool_call_id)

    def _as(self, handler: CombiningHandler | None) -> Run:
        """The same run (same id, parent and kind), heard by `handler` instead."""
        twin = Run.__new__(Run)
        for name in RunInfo.__slots__:
            setattr(twin, name, getattr(self, name))
        twin.handler = handler
        twin.ended = self.ended
        return twin


_ENDINGS: dict[str, tuple[CallbackEvent, CallbackEvent]] = {
    kind: (ending(kind, "end"), ending(kind, "error")) for kind in get_args(RunKind)
}
"""The events that report a run's end and its error, by kind."""

_current: ContextVar[Run | None] = ContextVar("chainkit_run", default=None)
_tokens_wanted: ContextVar[bool] = ContextVar("chainkit_tokens_wanted", default=False)


def current_run() -> RunInfo | None:
    """The innermost run of the calling context; None outside any run."""
    return _current.get()


def active_handler() -> CombiningHandler | None:
    """The handler that hears the events of the calling context; None when nobody listens."""
    run = _current.get()
    return None if run is None else run.handler


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


enter = Run
"""`enter(kind, name, own=None, tool_call_id=None)`: a run of `kind` named `name` inside the
current one (a tool run carrying out the tool call `tool_call_id`), to enter with `with`. Its
handler is the one active here joined with `own` (a component's
handler, or a call's `callbacks=`), and stays active for the runs inside it. The class itself,
so that beginning a run, which every model and tool call does, costs one call."""


@contextmanager
def retrieval(name: str, query: str, own: CombiningHandler | None = None) -> Iterator[list[Any]]:
    """A "retriever" run of the retriever named `name` looking for `query`: its start, then,
    once the block has put what it found (documents with their scores, or tools) in the list
    it is given, its end with them, or its error. The one place retrievals are reported, a
    tool retriever's and a document retriever's; `own` is the handler of the component it
    runs for (an agent's), joined with the active one.

    The run is named after the retriever, never the query: a run's name becomes a span name,
    a trace's label and a log's, where the user's words must not go. So the events, which
    carry the query, are reported here rather than by the run."""
    with enter("retriever", name, own) as run:
        handler = run.handler
        try:
            if handler is not None:
                handler.handle_retriever_start(query)
            found: list[Any] = []
            yield found
        except BaseException as error:
            run.ended = True
            if handler is not None:
                handler.handle_retriever_error(query, error)
            raise
        run.ended = True
        if handler is not None:
            handler.handle_retriever_end(query, list(found))


@contextmanager
def handled_by(handler: CombiningHandler | None) -> Iterator[None]:
    """Makes `handler` the active one for what starts inside, in place of the current one
    (which it must hold): for a wrapper that filters a step's events, such as the executor's
    at a deadline. Outside any run there is no handler to replace: nothing changes."""
    current = _current.get()
    if current is None:
        yield
        return
    token = _current.set(current._as(handler))
    try:
        yield
    finally:
        _current.reset(token)


@contextmanager
def reporting_for(run: RunInfo) -> Iterator[None]:
    """Makes `run` the current run while an event of that run is reported from elsewhere, so
    that `current_run()` is right in the handler (an abandoned call's error, say)."""
    if not isinstance(run, Run):
        raise HandlerTypeError(f"reporting_for takes a run current_run() gave, got {run!r}")
    token = _current.set(run)
    try:
        yield
    finally:
        _current.reset(token)


@contextmanager
def streaming_tokens() -> Iterator[None]:
    """Inside, every model call streams its reply, its pieces heard as token events, even
    with no `streaming_func` given: in nested runs, tools' own agents and threads that carry
    the context, as the handlers are."""
    token = _tokens_wanted.set(True)
    try:
        yield
    finally:
        _tokens_wanted.reset(token)


def tokens_wanted() -> bool:
    """Whether the calling context is inside `streaming_tokens`."""
    return _tokens_wanted.get()
