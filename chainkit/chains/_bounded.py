"""Calls run side by side, at most so many at once: in worker threads that carry the
caller's context (each call's run is the current run's child), or as asyncio tasks."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from chainkit._threads import submit
from chainkit.chains import api

T = TypeVar("T")


def side_by_side(works: Sequence[Callable[[], T]], limit: int) -> list[T]:
    """Each of `works` called, at most `limit` at once (this thread and `limit - 1`
    workers), their results in order; the first failure stops the calls not yet started
    and is raised once the calls under way have ended."""
    results: list[Any] = [None] * len(works)
    pending = iter(range(len(works)))
    lock = threading.Lock()
    failed = threading.Event()

    def worker() -> None:
        while not failed.is_set():
            with lock:
                index = next(pending, None)
            if index is None:
                return
            try:
                results[index] = works[index]()
            except BaseException:
                failed.set()
                raise

    helpers = [submit(worker) for _ in range(min(limit, len(works)) - 1)]
    try:
        worker()
    finally:
        errors = [helper.exception() for helper in helpers]
    for error in errors:
        if error is not None:
            raise error
    return results


async def aside_by_side(works: Sequence[Callable[[], Awaitable[T]]], limit: int) -> list[T]:
    """Async twin of `side_by_side`: tasks, at most `limit` running at once."""
    import asyncio  # loaded already by the running event loop, not at import

    gate = asyncio.Semaphore(limit)

    async def one(work: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await work()

    tasks = [asyncio.ensure_future(one(work)) for work in works]
    return await api._gathered(tasks, return_exceptions=False)
