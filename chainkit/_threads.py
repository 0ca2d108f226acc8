"""Worker threads that a caller may stop waiting for, and that never hold up interpreter exit.

`concurrent.futures.ThreadPoolExecutor` (and so `asyncio.to_thread`) joins its threads when the
interpreter exits, and `asyncio.run` joins the loop's default executor before it returns: one
call that never returns then hangs the program for good. These workers are daemon threads,
joined by no one. A call abandoned by its caller runs on until it returns; its result is
dropped.
"""

from __future__ import annotations

import contextvars
import itertools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_IDLE_SECONDS = 60.0
"""How long an idle worker waits for work before it ends."""

_Task = tuple[Future[Any], contextvars.Context, Callable[..., Any], tuple[Any, ...]]


class _DaemonWorkers:
    """Runs each submitted call in an idle worker, or in a new one when none is idle.

    There is no upper bound on the number of workers: a bound would let calls that never
    return starve every later call. Each call runs in a copy of the submitter's context.
    """

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[_Task] = queue.SimpleQueue()
        # One token per worker that finished a call and went back to wait for the next.
        self._idle = threading.Semaphore(0)
        self._numbers = itertools.count(1)

    def submit(self, function: Callable[..., T], /, *args: Any) -> Future[T]:
        future: Future[T] = Future()
        self._tasks.put((future, contextvars.copy_context(), function, args))
        if not self._idle.acquire(blocking=False):
            name = f"chainkit-worker-{next(self._numbers)}"
            threading.Thread(target=self._work, name=name, daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            try:
                task = self._tasks.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                # Leave only if no submitter has counted on this worker being idle.
                if self._idle.acquire(blocking=False):
                    return
                continue
            _run(*task)
            del task  # an idle worker holds nothing of the call it ran
            self._idle.release()


def _run(
    future: Future[T],
    context: contextvars.Context,
    function: Callable[..., T],
    args: tuple[Any, ...],
) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = context.run(function, *args)
    except BaseException as error:
        future.set_exception(error)
    else:
        future.set_result(result)


_workers = _DaemonWorkers()


def submit(function: Callable[..., T], /, *args: Any) -> Future[T]:
    """Runs `function(*args)` in a daemon worker thread; its Future holds the outcome."""
    return _workers.submit(function, *args)


async def in_thread(function: Callable[..., T], /, *args: Any) -> T:
    """Awaits `function(*args)` run in a daemon worker; like `asyncio.to_thread`, except that
    a call abandoned by a cancelled caller keeps neither the event loop nor the interpreter
    from closing."""
    import asyncio  # loaded already by the running event loop, not at import

    return await asyncio.wrap_future(submit(function, *args))
