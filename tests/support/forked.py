"""Runs a function in a new process forked from a single-threaded server
(multiprocessing's forkserver): a fork of the test process itself, which has threads, may
inherit a lock some thread held and hang. The function must be importable (module level); what
it returns comes back through JSON."""

from __future__ import annotations

import json
import multiprocessing
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["tests.support.durable_runs"])
HANG_GUARD = 60.0


def _child(target: Callable[..., object], args: tuple[Any, ...], result: str) -> None:
    Path(result).write_text(json.dumps(target(*args)), encoding="utf-8")


def start(target: Callable[..., object], *args: Any) -> tuple[Any, Path]:
    """Starts `target(*args)` in a new process; the process and where its result will be."""
    result = Path(tempfile.mkdtemp()) / "result.json"
    process = _CONTEXT.Process(target=_child, args=(target, args, str(result)))
    process.start()
    return process, result


def finish(process: Any, result: Path) -> tuple[int, Any]:
    """Waits for a process `start` made: its exit code (-9 when SIGKILLed) and what its
    function returned (None when it did not return)."""
    process.join(HANG_GUARD)
    if process.is_alive():
        process.kill()
        process.join()
        raise AssertionError(f"the child did not end within {HANG_GUARD:.0f} s")
    returned = json.loads(result.read_text("utf-8")) if result.exists() else None
    return process.exitcode, returned


def run(target: Callable[..., object], *args: Any) -> tuple[int, Any]:
    """`target(*args)` in a new process, waited for: its exit code and what it returned."""
    return finish(*start(target, *args))
