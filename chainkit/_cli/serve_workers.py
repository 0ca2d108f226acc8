"""`chainkit serve --workers N`: N processes serving on the command's one listening socket.

Each worker is spawned (a fresh interpreter: nothing of the command's memory is shared, as a
fork would share a database connection), builds the app from the factory as the command did,
and serves it as one process does (`served.serve_app`): at a stop it drains its runs while it
still listens, so that every request it took is answered. uvicorn's own workers cannot do
that: they stop listening first, and cut the requests still running when their time is up.

The command supervises them: SIGTERM or Ctrl-C is passed on to each, a worker that dies is
replaced, and one that cannot build its app stops them all (it would fail again).
"""

from __future__ import annotations

import multiprocessing
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from multiprocessing.process import BaseProcess
from typing import Any

from chainkit._cli import exit_status, stderr
from chainkit._cli.served import COMMAND, built_app, not_started, serve_app

CANNOT_START = 3
"""A worker's exit status when it cannot build its app."""
CHECK_SECONDS = 0.5
"""How often the command looks for workers that died."""


def serve_in_workers(listening: socket.socket, plan: Mapping[str, Any], workers: int) -> int:
    """Serves with `workers` processes until the command is stopped; its exit status."""
    spawn = multiprocessing.get_context("spawn")

    def start() -> BaseProcess:
        worker = spawn.Process(target=work, args=(listening, dict(plan)), name="chainkit serve")
        worker.start()
        return worker

    stop = threading.Event()
    with _stopping_on_signals(stop):
        running = [start() for _ in range(workers)]
        started = _supervise(running, stop, start)
        for worker in running:
            if worker.is_alive():
                worker.terminate()  # SIGTERM: it drains, as one process does
        for worker in running:
            worker.join()
    return exit_status.SUCCESS if started else not_started()


def _supervise(
    running: list[BaseProcess], stop: threading.Event, start: Callable[[], BaseProcess]
) -> bool:
    """Replaces the workers that die until `stop` is set; False (at once) when one could not
    build its app."""
    while not stop.wait(CHECK_SECONDS):
        for index, worker in enumerate(running):
            if worker.is_alive():
                continue
            if worker.exitcode == CANNOT_START:
                return False
            stderr.tell(
                COMMAND, f"worker {worker.pid} ended (exit status {worker.exitcode}): replaced"
            )
            running[index] = start()
    return True


@contextmanager
def _stopping_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set `stop` while in the block (Ctrl-C reaches the workers too: they
    are in the terminal's process group)."""
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, lambda *_: stop.set()) for number in stops}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def work(listening: socket.socket, plan: dict[str, Any]) -> None:
    """A worker process: builds the app and serves it on `listening` until stopped. One that
    cannot build it (the command built it once, so something changed: a database that went
    away) says why and exits with CANNOT_START."""
    try:
        app = built_app(plan)
    except Exception as failed:
        said = f"{type(failed).__name__}: {failed}"
        stderr.error(COMMAND, f"a worker could not build the app: {said}")
        sys.exit(CANNOT_START)
    sys.exit(serve_app(app, listening, plan))
