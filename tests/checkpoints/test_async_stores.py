"""An async run never makes its event loop wait for the store: while another process holds the
SQLite database's write lock, or while a PostgreSQL server is down and the store waits to
reconnect, the run (or its resumption) waits, and the loop goes on with its other tasks."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from chainkit import agents, chains, checkpoints, tools
from chainkit.checkpoints.state import PendingCall
from chainkit.llms import FakeLLM
from chainkit.schema import AgentAction
from tests.support import durable_runs, forked
from tests.support.durable_runs import ANSWER, MRKL_SCRIPT, QUESTION, Points
from tests.support.postgres_server import private_server

HOLD_AT_MOST = 20.0
"""How long the other process holds the lock unless told to let go first: the test's bound,
never reached when the loop runs on."""


def _hold_write_lock(path: str, ready: str, stop: str) -> str:
    """Holds the database's write lock until `stop` exists (or HOLD_AT_MOST passed): says
    which of the two ended it."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN IMMEDIATE")
    Path(ready).touch()
    give_up = time.monotonic() + HOLD_AT_MOST
    while not Path(stop).exists():
        if time.monotonic() > give_up:
            connection.execute("ROLLBACK")
            return "held until its own limit: nobody told it to let go"
        time.sleep(0.005)
    connection.execute("ROLLBACK")
    return "let go when told"


def _stopped_run(store: checkpoints.SQLiteStore, run_id: str) -> None:
    action = AgentAction("append", '{"text": "a"}', MRKL_SCRIPT[0])
    store.save(
        checkpoints.RunState(
            run_id,
            "OneShotAgent",
            ["append", "note"],
            {"input": QUESTION},
            pending=[PendingCall(action)],
            iteration=1,
        )
    )


async def _beat_while(started: Any, stop: Path) -> tuple[int, bool, Any]:
    """Starts the run; ticks 20 times while it waits; then lets the lock go. Returns the
    ticks, whether the run was still waiting then, and its outputs."""
    run = asyncio.ensure_future(started)
    ticks = 0
    while ticks < 20:
        await asyncio.sleep(0.01)
        ticks += 1
    waiting = not run.done()
    stop.touch()
    return ticks, waiting, await run


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["run", "resume"])
def test_the_loop_ticks_while_another_process_holds_the_sqlite_write_lock(
    tmp_path: Path, run_id: str, how: str
) -> None:
    path, ready, stop = tmp_path / "runs.db", tmp_path / "ready", tmp_path / "stop"
    store = checkpoints.SQLiteStore(path, timeout=60)
    if how == "resume":
        _stopped_run(store, run_id)
    chain = durable_runs.executor("mrkl", tmp_path / "log", store, Points(None))
    holder, said = forked.start(_hold_write_lock, str(path), str(ready), str(stop))
    durable_runs.wait_for(ready)

    async def started() -> Any:
        if how == "resume":
            return (await chains.aresume(chain, run_id))["output"]
        with checkpoints.named_run(run_id):
            return await chains.arun(chain, QUESTION)

    ticks, waiting, answer = asyncio.run(_beat_while(started(), stop))
    _, how_it_ended = forked.finish(holder, said)
    assert how_it_ended == "let go when told"
    assert ticks == 20 and waiting  # the run waited for the lock; the loop did not
    assert answer == ANSWER
    assert store.load(run_id).status == "finished"


@pytest.mark.timeout(120)
def test_the_loop_ticks_while_the_postgres_store_waits_to_reconnect(run_id: str) -> None:
    with private_server() as server:

        @tools.tool
        def pay(amount: str) -> str:
            """Pays an amount."""
            server.stop()  # the save of its completion waits for the server to come back
            return f"paid {amount}"

        llm = FakeLLM(['Action: pay\nAction Input: {"amount": "10"}', "Final Answer: paid"])
        store = checkpoints.PostgresStore(server.dsn, reconnect_seconds=60)
        chain = agents.Executor(agents.OneShotAgent(llm, [pay]), checkpointer=store)

        async def main() -> tuple[int, bool, str]:
            with checkpoints.named_run(run_id):
                run = asyncio.ensure_future(chains.arun(chain, "pay"))
            while not llm.calls:  # until the run is in its step
                await asyncio.sleep(0.01)
            ticks = 0
            while ticks < 20:
                await asyncio.sleep(0.01)
                ticks += 1
            waiting = not run.done()
            await asyncio.to_thread(server.start)
            return ticks, waiting, await run

        ticks, waiting, answer = asyncio.run(main())
        assert ticks == 20 and waiting and answer == "paid"
        assert store.load(run_id).status == "finished"
