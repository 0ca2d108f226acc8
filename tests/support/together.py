"""Work started in many threads at once, for tests of concurrent use."""

from __future__ import annotations

import threading
from collections.abc import Callable


def in_threads(work: Callable[[int], None], count: int) -> None:
    """Runs `work(0)` … `work(count - 1)`, each in a thread of its own, released together;
    returns when all have ended, raising the first error one of them raised."""
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(worker: int) -> None:
        start.wait()
        try:
            work(worker)
        except BaseException as error:  # handed to the test's thread below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(worker,)) for worker in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
