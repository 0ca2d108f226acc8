"""Two server processes sharing a PostgreSQL checkpointer: a worker killed (SIGKILL) in the
middle of a run's tool call leaves the run resumable through the other, which takes it over
at once (its lease names a process that is gone) and finishes it."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from tests.support.postgres import DSN_VARIABLE, postgres_dsn
from tests.support.serving import Answer, call
from tests.support.serving_workers import GATE_VARIABLE, TOKEN_VARIABLE, workers

TOKEN = "t0ken-for-workers"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WAIT_SECONDS = 60.0


def _when(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen in {WAIT_SECONDS}s")
        time.sleep(0.02)


def test_a_run_whose_worker_was_killed_mid_call_is_resumed_through_the_other(
    tmp_path: Path,
) -> None:
    env = {DSN_VARIABLE: postgres_dsn(), GATE_VARIABLE: str(tmp_path), TOKEN_VARIABLE: TOKEN}
    run_id = f"killed-{uuid.uuid4().hex}"
    with workers(2, env, tmp_path) as (first, second):
        answers: list[Answer | OSError] = []

        def invoke() -> None:
            try:
                body = {"input": "do it", "run_id": run_id}
                answers.append(call(first.url, "POST", "/invoke", body, AUTH, timeout=WAIT_SECONDS))
            except OSError as cut:
                answers.append(cut)

        client = threading.Thread(target=invoke, daemon=True)
        client.start()
        started = tmp_path / "started"
        _when(started.exists, "the held call's start")
        assert started.read_text().split() == [str(first.process.pid)]
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait(WAIT_SECONDS)
        client.join(WAIT_SECONDS)
        assert len(answers) == 1 and isinstance(answers[0], OSError)

        shown = call(second.url, "GET", f"/runs/{run_id}", None, AUTH).json()
        assert shown["status"] == "running" and shown["steps"] == []
        [cut] = shown["in_progress"]
        assert (cut["tool"], cut["started"], cut["observation"]) == ("hold", True, None)
        resume = f"/runs/{run_id}/resume"
        refused = call(second.url, "POST", resume, {}, AUTH)
        assert refused.status == 409, refused.text
        assert refused.json()["error"]["code"] == "call_interrupted"
        assert "hold" in refused.json()["error"]["message"]

        (tmp_path / "go").touch()
        resumed = call(second.url, "POST", resume, {"interrupted": "repeat"}, AUTH)
        assert resumed.status == 200, resumed.text
        assert resumed.json() == {"run_id": run_id, "outputs": {"output": "did one"}}
        assert started.read_text().split() == [str(first.process.pid), str(second.process.pid)]
        listed = call(second.url, "GET", "/runs?status=finished&limit=1000", None, AUTH).json()
        assert run_id in [run["run_id"] for run in listed["runs"]]
