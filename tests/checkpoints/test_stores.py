"""The stores: a state saved is the state loaded, the runs listed, and one holder at a time
across processes, for SQLite and PostgreSQL alike."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chainkit import checkpoints
from chainkit.checkpoints.state import PendingCall
from chainkit.schema import AgentAction, AgentStep, Message, ToolCall
from tests.support import durable_runs, forked
from tests.support.durable_runs import StoreSpec


def _state(run_id: str, steps: int) -> checkpoints.RunState:
    reply = Message.assistant("", [ToolCall("c1"), ToolCall("c2")])
    taken = [
        AgentStep(AgentAction("note", f"{i}", "", f"c{i % 2 + 1}", [reply]), f"ok:{i}")
        for i in range(steps)
    ]
    return checkpoints.RunState(run_id, "ToolCallingAgent", ["note"], {"input": "q"}, taken)


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


def test_a_state_older_than_the_record_is_refused_and_the_record_kept(
    open_store: Callable[[], Any], run_id: str
) -> None:
    store = open_store()
    state = _state(run_id, 1)
    store.save(state)
    earlier = checkpoints.RunState.from_json(state.to_json())  # a copy, kept "anywhere"
    state.steps.extend(_state(run_id, 4).steps[1:])
    store.save(state)
    with pytest.raises(checkpoints.StaleStateError, match=f"{run_id}.*state is of save 1"):
        open_store().save(earlier)  # another store object: it knows nothing of the 4
    loaded = open_store().load(run_id)
    assert (len(loaded.steps), loaded.saved) == (4, 2)
    with pytest.raises(checkpoints.RunExistsError, match=run_id):
        open_store().save(_state(run_id, 0))  # a new run under the same id
    assert len(open_store().load(run_id).steps) == 4


def test_an_unknown_run_is_named(open_store: Callable[[], Any], run_id: str) -> None:
    with pytest.raises(checkpoints.RunNotFoundError, match=run_id):
        open_store().load(run_id)


def test_a_held_run_is_refused_to_another_store_until_its_process_dies(
    store_spec: StoreSpec, run_id: str, tmp_path: Path
) -> None:
    ready, stop = tmp_path / "ready", tmp_path / "stop"
    holder, _ = forked.start(
        durable_runs.hold, store_spec, _state(run_id, 1).to_dict(), str(ready), str(stop)
    )
    try:
        durable_runs.wait_for(ready)
        store = durable_runs.open_store(store_spec)
        with pytest.raises(checkpoints.RunLockedError, match=run_id):
            store.acquire(run_id)
    finally:
        holder.kill()
        holder.join()
    _acquire_once_the_server_noticed(store, run_id)  # its holder died: the hold goes with it
    with pytest.raises(checkpoints.RunLockedError, match="this store"):
        store.acquire(run_id)
    store.release(run_id)
    store.acquire(run_id)
    store.release(run_id)


def _acquire_once_the_server_noticed(store: Any, run_id: str) -> None:
    """PostgreSQL drops a dead client's locks when its backend reads the closed connection:
    soon after the process died, not at once."""
    deadline = time.monotonic() + 30
    while True:
        try:
            store.acquire(run_id)
            return
        except checkpoints.RunLockedError:
            assert time.monotonic() < deadline, "the dead holder's hold never went"
            time.sleep(0.01)


def test_two_processes_resuming_one_run_exactly_one_proceeds(
    store_spec: StoreSpec, run_id: str, tmp_path: Path
) -> None:
    action = AgentAction("append", '{"text": "c"}', durable_runs.MRKL_SCRIPT[2])
    stopped = checkpoints.RunState(
        run_id,
        "OneShotAgent",
        ["append", "note"],
        {"input": "q"},
        pending=[PendingCall(action)],
        iteration=1,
    )
    forked.run(durable_runs.save, store_spec, stopped.to_dict())
    children = [
        forked.start(durable_runs.resume_when_told, store_spec, run_id, str(tmp_path))
        for _ in range(2)
    ]
    deadline = time.monotonic() + 60
    while not any(result.exists() for _, result in children):
        assert time.monotonic() < deadline, "neither resume answered"
        time.sleep(0.005)
    (tmp_path / "go").touch()  # the one refused has answered: let the other finish
    outcomes = sorted(forked.finish(*child)[1] for child in children)
    assert outcomes[0] == durable_runs.ANSWER
    assert outcomes[1].startswith("locked: ") and run_id in outcomes[1]
    assert (tmp_path / "log").read_text("utf-8").splitlines() == ["append:c", "append:d"]


@pytest.mark.parametrize(
    "decision", [{"kind": "yes"}, {"kind": "edit"}, {"kind": "deny", "reason": 3}, "approve"]
)
def test_a_saved_decision_that_is_not_one_is_a_format_error(decision: object) -> None:
    action = AgentAction("note", "x", "", "c1")
    state = checkpoints.RunState(
        "r", "ToolCallingAgent", ["note"], {}, pending=[PendingCall(action)]
    ).to_dict()
    state["pending"][0]["decision"] = decision
    with pytest.raises(checkpoints.StateFormatError, match="decision is not one"):
        checkpoints.RunState.from_dict(state)


def test_a_database_an_older_chainkit_made_gets_the_lease_and_version_columns(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:  # the tables as chainkit made them before leases
        old.executescript(
            "CREATE TABLE chainkit_runs (run_id TEXT PRIMARY KEY, agent TEXT NOT NULL, "
            "header TEXT NOT NULL, progress TEXT NOT NULL, status TEXT NOT NULL, "
            "steps INTEGER NOT NULL, updated REAL NOT NULL, lease_owner TEXT, lease_pid INTEGER);"
            "CREATE TABLE chainkit_steps (run_id TEXT NOT NULL, seq INTEGER NOT NULL, "
            "step TEXT NOT NULL, PRIMARY KEY (run_id, seq));"
        )
        header, progress = _state("old-run", 0).header(), _state("old-run", 0).progress()
        old.execute(
            "INSERT INTO chainkit_runs VALUES (?, ?, ?, ?, 'running', 0, 0, NULL, NULL)",
            ("old-run", "ToolCallingAgent", json.dumps(header), json.dumps(progress)),
        )
    store = checkpoints.SQLiteStore(path)
    store.acquire("old-run")
    state = store.load("old-run")
    state.steps.extend(_state("old-run", 2).steps)
    store.save(state)
    store.release("old-run")
    assert (len(checkpoints.SQLiteStore(path).load("old-run").steps), state.saved) == (2, 1)


def test_a_release_from_inside_a_save_waits_for_the_save(
    open_store: Callable[[], Any], run_id: str
) -> None:
    """What a run's loop left unfinished does when the garbage collector finalizes it while
    its thread is inside the store, saving another run: it lets its run go from there."""
    store, held = open_store(), f"{run_id}-held"
    store.save(_state(held, 1))
    store.acquire(held)

    class ReleasingMidSave(checkpoints.RunState):
        def progress(self) -> dict[str, Any]:
            store.release(held)
            return super().progress()

    base = _state(run_id, 2)
    state = ReleasingMidSave(base.run_id, base.agent, base.tools, base.inputs, base.steps)
    saved = threading.Event()

    def save() -> None:
        store.save(state)
        saved.set()

    threading.Thread(target=save, daemon=True).start()
    assert saved.wait(60), "the save deadlocked on the release inside it"
    open_store().acquire(held)  # released, once the save was done
    assert len(open_store().load(run_id).steps) == 2
