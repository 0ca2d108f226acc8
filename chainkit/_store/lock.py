"""The lock of a database's connection, safe against the garbage collector: a run's loop left
unfinished is finalized whenever the collector runs, in whatever thread allocates, and lets
its run go (`release`) from there, possibly while that thread is inside the store saving."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from chainkit._errors import ChainkitError


class StoreLock:
    """A lock for one thread at a time. Work asked for by `later` from the thread already
    inside waits until that thread leaves (so it neither deadlocks on the lock nor runs in
    the middle of a transaction); from any other thread it waits for the lock."""

    __slots__ = ("_depth", "_later", "_lock")

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._later: list[Callable[[], None]] = []

    def __enter__(self) -> None:
        self._lock.acquire()
        self._depth += 1

    def __exit__(self, *exc: object) -> None:
        try:
            while self._depth == 1 and self._later:
                with contextlib.suppress(ChainkitError):  # a finalizer's: no caller to tell
                    self._later.pop(0)()
        finally:
            self._depth -= 1
            self._lock.release()

    def later(self, work: Callable[[], None]) -> None:
        """`work()` under the lock: now, or, when this thread is inside already, as it
        leaves."""
        with self:
            if self._depth > 1:
                self._later.append(work)
            else:
                work()
