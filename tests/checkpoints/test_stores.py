"""The stores: a state saved is the state loaded, the runs listed, and one holder at a time
across processes, for SQLite and PostgreSQL alike."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chainkit import agents, chains, checkpoints, tools
from chainkit.schema import AgentAction, AgentStep, Message, ToolCall
from tests.support import durable_runs
from tests.support.durable_runs import ByObservations


def _state(run_id: str, steps: int) -> checkpoints.RunState:
    reply = Message.assistant("", [ToolCall("c1"), ToolCall("c2")])
    taken = [
        AgentStep(AgentAction("note", f"{i}", "", f"c{i % 2 + 1}", [reply]), f"ok:{i}")
        for i in range(steps)
    ]
    return checkpoints.RunState(run_id, "ToolCallingAgent", ["note"], {"input": "q"}, taken)


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.005)


def _fork(work: Callable[[], None]) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            work()
        finally:
            os._exit(0)
    return pid


def test_a_saved_state_loads_back_step_by_step(open_store: Callable[[], Any], run_id: str) -> None:
    store = open_store()
    state = _state(run_id, 2)
    store.save(state)
    state.steps.extend(_state(run_id, 5).steps[2:])
    state.iteration = 3
    store.save(state)  # adds the new steps' rows
    loaded = open_store().load(run_id)
    assert loaded.to_dict() == state.to_dict()
    assert loaded.steps[0].action.message_log[0] is loaded.steps[1].action.message_log[0]
    summary = next(run for run in open_store().runs() if run.run_id == run_id)
    assert (summary.agent, summary.status, summary.steps) == ("ToolCallingAgent", "running", 5)


def test_an_unknown_run_is_named(open_store: Callable[[], Any], run_id: str) -> None:
    with pytest.raises(checkpoints.RunNotFoundError, match=run_id):
        open_store().load(run_id)


def test_a_held_run_is_refused_to_another_store_until_its_process_dies(
    open_store: Callable[[], Any], run_id: str, tmp_path: Path
) -> None:
    ready, stop = tmp_path / "ready", tmp_path / "stop"

    def hold() -> None:
        store = open_store()
        store.save(_state(run_id, 1))
        store.acquire(run_id)
        ready.touch()
        _wait_for(stop)

    holder = _fork(hold)
    try:
        _wait_for(ready)
        store = open_store()
        with pytest.raises(checkpoints.RunLockedError, match=run_id):
            store.acquire(run_id)
    finally:
        os.kill(holder, signal.SIGKILL)
        os.waitpid(holder, 0)
    store.acquire(run_id)  # its holder died: the hold went with it
    with pytest.raises(checkpoints.RunLockedError, match="this store"):
        store.acquire(run_id)
    store.release(run_id)
    store.acquire(run_id)


def test_two_processes_resuming_one_run_exactly_one_proceeds(
    open_store: Callable[[], Any], run_id: str, tmp_path: Path
) -> None:
    go = tmp_path / "go"

    def executor() -> agents.Executor:
        @tools.tool
        def append(text: str) -> str:
            """Appends text, once the test says go."""
            _wait_for(go)
            with open(tmp_path / "log", "a", encoding="utf-8") as file:
                file.write(f"append:{text}\n")
            return f"ok:append:{text}"

        model = ByObservations(list(durable_runs.MRKL_SCRIPT[2:]))
        agent = agents.OneShotAgent(
            model,
            [append, durable_runs.side_effect_tools(tmp_path / "n", durable_runs.Points(None))[1]],
        )
        return agents.Executor(agent, checkpointer=open_store())

    def save_stopped() -> None:
        action = AgentAction("append", '{"text": "c"}', durable_runs.MRKL_SCRIPT[2])
        state = checkpoints.RunState(
            run_id,
            "OneShotAgent",
            ["append", "note"],
            {"input": "q"},
            pending=[checkpoints.PendingCall(action)],
            iteration=1,
        )
        open_store().save(state)

    os.waitpid(_fork(save_stopped), 0)

    def resume(name: str) -> Callable[[], None]:
        def work() -> None:
            try:
                outcome = chains.resume(executor(), run_id)["output"]
            except checkpoints.RunLockedError as error:
                outcome = f"locked: {error}"
            (tmp_path / name).write_text(json.dumps(outcome), encoding="utf-8")

        return work

    children = [_fork(resume("first")), _fork(resume("second"))]
    deadline = time.monotonic() + 60
    while not any((tmp_path / name).exists() for name in ("first", "second")):
        assert time.monotonic() < deadline
        time.sleep(0.005)
    go.touch()  # the one refused has answered: let the other finish
    for child in children:
        os.waitpid(child, 0)
    outcomes = sorted(json.loads((tmp_path / n).read_text("utf-8")) for n in ("first", "second"))
    assert outcomes[0] == durable_runs.ANSWER
    assert outcomes[1].startswith("locked: ") and run_id in outcomes[1]
    assert (tmp_path / "log").read_text("utf-8").splitlines() == ["append:c", "append:d"]
