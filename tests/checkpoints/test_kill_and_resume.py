"""A run SIGKILLed at random points, resumed in another process: every tool call that
completed happened once, a call cut in the middle at most twice (repeated by decision), a
denied call never, an edited one only as edited, and the answer is the uninterrupted run's."""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path

import pytest

from tests.support import durable_runs, forked
from tests.support.durable_runs import APPROVED_CALLS, EXPECTED_CALLS, StoreSpec

KILLS = int(os.environ.get("CHAINKIT_TEST_KILLS", "10"))
"""Kills per test case (more, to measure: CHAINKIT_TEST_KILLS=40)."""


def _lines(log: Path) -> Counter[str]:
    return Counter(log.read_text(encoding="utf-8").splitlines()) if log.exists() else Counter()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("approving", [False, True], ids=["free", "approved"])
@pytest.mark.parametrize("kind", ["native", "mrkl"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_killed_run_resumes_without_repeating_a_completed_call(
    store_spec: StoreSpec, tmp_path: Path, run_id: str, kind: str, mode: str, approving: bool
) -> None:
    expected = APPROVED_CALLS if approving else EXPECTED_CALLS
    whole_log = tmp_path / "whole.log"
    _, (answer, points) = forked.run(
        durable_runs.whole_run, store_spec, kind, mode, str(whole_log), f"{run_id}-whole", approving
    )
    assert answer == durable_runs.ANSWER
    assert _lines(whole_log) == Counter(expected)
    seed = f"{kind}-{mode}-{approving}"
    chosen = random.Random(seed).sample(range(1, points + 1), min(KILLS, points))

    for trial, kill_at in enumerate(chosen):
        log, trial_id = tmp_path / f"{trial}.log", f"{run_id}-{trial}"
        run = (store_spec, kind, mode, str(log), trial_id)
        status, _ = forked.run(durable_runs.killed_run, *run, kill_at, approving)
        assert status == -9, f"not killed at point {kill_at}"
        _, (outputs, cut) = forked.run(durable_runs.resumed_run, *run, approving)

        assert outputs == {"output": durable_runs.ANSWER}, f"killed at point {kill_at}"
        lines = _lines(log)
        assert set(lines) == set(expected), f"killed at point {kill_at}: {lines}"
        repeated = {call for call, times in lines.items() if times > 1}
        assert repeated <= set(cut), f"killed at point {kill_at}: {lines}, cut {cut}"
        assert max(lines.values()) <= 2
