"""Server processes sharing one PostgreSQL checkpointer, as `chainkit serve --workers 2` runs
them: each a `python -c` running uvicorn on `create_app(held_executor())`, started on a free
port and killed (by its own process id) when the block ends.

`held_executor` is an agent whose one tool call holds until the test lets it go: it writes
`started` in the gate folder (CHAINKIT_TEST_GATE) and waits for a `go` file there, so a test
can kill a worker while the call is in flight."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from chainkit import agents, checkpoints, tools
from tests.support.approvals import CallsThenReports
from tests.support.postgres import DSN_VARIABLE
from tests.support.serving import START_SECONDS, call, free_port

GATE_VARIABLE = "CHAINKIT_TEST_GATE"
TOKEN_VARIABLE = "CHAINKIT_SERVE_TOKEN"
HOLD_SECONDS = 60.0
"""The longest a held call waits for its `go` before failing (no test hangs on it)."""
ROOT = Path(__file__).resolve().parents[2]
WORKER = (
    "import importlib, sys, uvicorn\n"
    "module, name = sys.argv[2].split(':')\n"
    "app = getattr(importlib.import_module(module), name)()\n"
    "uvicorn.run(app, host='127.0.0.1', port=int(sys.argv[1]), log_level='warning')\n"
)
"""A worker: `python -c WORKER PORT module:function`, serving the app the function makes."""


@tools.tool
def hold(step: str) -> str:
    """Does a step that lasts until the test lets it go."""
    gate = Path(os.environ[GATE_VARIABLE])
    with open(gate / "started", "a", encoding="utf-8") as started:
        started.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + HOLD_SECONDS
    while not (gate / "go").exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the held call was never let go")
        time.sleep(0.02)
    return f"did {step}"


def held_executor() -> agents.Executor:
    """An agent calling `hold` once, then answering with what it observed; its runs kept in
    the PostgreSQL database of DSN_VARIABLE."""
    store = checkpoints.PostgresStore(os.environ[DSN_VARIABLE])
    agent = agents.ToolCallingAgent(CallsThenReports(("hold", {"step": "one"})), [hold])
    return agents.Executor(agent, checkpointer=store)


def worker_app() -> object:
    from chainkit.serving import ServerSettings, create_app

    return create_app(held_executor(), ServerSettings(token=os.environ[TOKEN_VARIABLE]))


@dataclass
class Worker:
    url: str
    process: subprocess.Popen[bytes]


@contextmanager
def workers(
    count: int,
    env: dict[str, str],
    logs: Path,
    app: str = "tests.support.serving_workers:worker_app",
) -> Iterator[list[Worker]]:
    """`count` server processes serving the app `app` ("module:function") makes, with `env`
    added to this one's, each answering /health; their output in `logs`. Each is killed when
    the block ends."""
    started: list[Worker] = []
    try:
        for number in range(count):
            port = free_port()
            log = open(logs / f"worker-{number}.log", "wb")  # noqa: SIM115 - the child's
            process = subprocess.Popen(
                [sys.executable, "-c", WORKER, str(port), app],
                env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            log.close()
            started.append(Worker(f"http://127.0.0.1:{port}", process))
        for worker in started:
            _wait_until_up(worker, env[TOKEN_VARIABLE])
        yield started
    finally:
        for worker in started:
            if worker.process.poll() is None:
                worker.process.kill()
            worker.process.wait(START_SECONDS)


def _wait_until_up(worker: Worker, token: str) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if worker.process.poll() is not None:
            raise RuntimeError(f"the worker at {worker.url} exited ({worker.process.returncode})")
        try:
            answer = call(worker.url, "GET", "/health", None, _auth(token), timeout=2.0)
        except OSError:
            time.sleep(0.05)
            continue
        if answer.status == 200:
            return
    raise RuntimeError(f"the worker at {worker.url} did not answer in {START_SECONDS}s")


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
