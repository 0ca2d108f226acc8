"""A run SIGKILLed at random points, resumed in another process: every tool call that
completed happened once, a call cut in the middle at most twice (repeated by decision), and
the answer is the uninterrupted run's.

Every run is in a forked process, the test's own never opens the database: SQLite's locks do
not survive a fork of a process holding the file open."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chainkit import checkpoints
from tests.support import durable_runs
from tests.support.durable_runs import EXPECTED_CALLS, Points

KILLS = 10


def _in_child(work: Callable[[], object], result: Path) -> tuple[int, Any]:
    """Runs `work` in a forked process; returns its wait status and what `work` returned
    (None when it was killed)."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test
        try:
            result.write_text(json.dumps(work()), encoding="utf-8")
        finally:
            os._exit(0)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            returned = json.loads(result.read_text("utf-8")) if result.exists() else None
            return status, returned
        time.sleep(0.002)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError("the run did not end within 60 s")


def _lines(log: Path) -> Counter[str]:
    return Counter(log.read_text(encoding="utf-8").splitlines()) if log.exists() else Counter()


def _cut_calls(store: Any, run_id: str) -> list[str]:
    """The calls of the stopped run that started and did not complete, as `tool:text`."""
    try:
        state = store.load(run_id)
    except checkpoints.RunNotFoundError:
        return []
    return [
        f"{entry.action.tool}:{json.loads(entry.action.tool_input)['text']}"
        for entry in state.pending
        if entry.started and entry.observation is None
    ]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["native", "mrkl"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_killed_run_resumes_without_repeating_a_completed_call(
    open_store: Callable[[], Any], tmp_path: Path, run_id: str, kind: str, mode: str
) -> None:
    whole_log = tmp_path / "whole.log"

    def whole_run() -> list[Any]:
        counting = Points(None)
        store = durable_runs.KillingStore(open_store(), counting)
        answer = durable_runs.run(
            mode, durable_runs.executor(kind, whole_log, store, counting), f"{run_id}-whole"
        )
        return [answer, counting.passed]

    _, (answer, points) = _in_child(whole_run, tmp_path / "whole.json")
    assert answer == durable_runs.ANSWER
    assert _lines(whole_log) == Counter(EXPECTED_CALLS)
    chosen = random.Random(f"{kind}-{mode}").sample(range(1, points + 1), KILLS)

    for trial, kill_at in enumerate(chosen):
        log, trial_id = tmp_path / f"{trial}.log", f"{run_id}-{trial}"

        def killed_run(kill_at: int = kill_at, log: Path = log, trial_id: str = trial_id) -> None:
            points = Points(kill_at)
            store = durable_runs.KillingStore(open_store(), points)
            durable_runs.run(mode, durable_runs.executor(kind, log, store, points), trial_id)

        def resumed_run(log: Path = log, trial_id: str = trial_id) -> list[Any]:
            store = open_store()
            cut = _cut_calls(store, trial_id)
            chain = durable_runs.executor(kind, log, store, Points(None))
            try:
                outputs = durable_runs.resume(mode, chain, trial_id)
            except checkpoints.RunNotFoundError:  # killed before its first save: run anew
                outputs = {"output": durable_runs.run(mode, chain, trial_id)}
            return [outputs, cut]

        status, _ = _in_child(killed_run, tmp_path / f"{trial}-killed.json")
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, kill_at
        _, (outputs, cut) = _in_child(resumed_run, tmp_path / f"{trial}-resumed.json")

        assert outputs == {"output": durable_runs.ANSWER}, f"killed at point {kill_at}"
        lines = _lines(log)
        assert set(lines) == set(EXPECTED_CALLS), f"killed at point {kill_at}: {lines}"
        repeated = {call for call, times in lines.items() if times > 1}
        assert repeated <= set(cut), f"killed at point {kill_at}: {lines}, cut {cut}"
        assert max(lines.values()) <= 2
