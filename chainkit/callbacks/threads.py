"""ContextThreadPoolExecutor: a thread pool whose work stays inside the run that gave it."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import copy_context
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class ContextThreadPoolExecutor(ThreadPoolExecutor):
    """A `concurrent.futures.ThreadPoolExecutor` whose calls each run in a copy of the
    context they were submitted from (`submit`, and `map`, which submits).

    A plain pool's threads start with an empty context: a chain or agent run there has no
    parent run, its events reach none of the handlers listening where it was started, and
    under `chains.stream` its model streams no tokens. Run from this pool, it is a child of
    the run that submitted it (a tool's, say), heard by the same handlers and streamed into
    the same `chains.stream`.
    """

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        context = copy_context()

        def in_context() -> T:
            return context.run(fn, *args, **kwargs)

        return super().submit(in_context)
