"""A PostgreSQL server that restarts, stays down, drops idle connections or refuses: the store
reconnects and carries on where that is safe, and otherwise raises a CheckpointError naming
the store, what it was doing and the cause, without the DSN's password; a later call works
again once the server is back."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# psycopg is the postgres extra (in `.[dev]`); without it these tests skip, except under CI.
if importlib.util.find_spec("psycopg") is None and not os.environ.get("CI"):
    pytest.skip('psycopg is not installed (pip install -e ".[postgres]")', allow_module_level=True)

import psycopg

from chainkit import agents, chains, checkpoints, tools
from chainkit.llms import FakeLLM
from tests.checkpoints.test_stores import _state
from tests.support import forked
from tests.support.idle_reset_proxy import IdleResetProxy, idle_reset_proxy
from tests.support.postgres import postgres_dsn
from tests.support.postgres_server import PASSWORD, PrivateServer, private_server


@pytest.fixture(scope="module")
def server() -> Iterator[PrivateServer]:
    with private_server() as started:
        yield started


def _grown(state: checkpoints.RunState, steps: int) -> checkpoints.RunState:
    """`state` with `steps` steps, the next save of its run."""
    state.steps.extend(_state(state.run_id, steps).steps[len(state.steps) :])
    return state


def _no_password(error: BaseException) -> None:
    while error is not None:
        assert PASSWORD not in str(error) and PASSWORD not in repr(error)
        error = error.__cause__ or error.__context__  # type: ignore[assignment]


def test_a_restart_between_saves_is_invisible(server: PrivateServer, run_id: str) -> None:
    store, state = checkpoints.PostgresStore(server.dsn), _state(run_id, 1)
    store.save(state)
    server.restart()
    store.save(_grown(state, 3))  # its connection was dropped: a new one saves
    server.restart()
    assert len(store.load(run_id).steps) == 3
    server.restart()
    assert run_id in [run.run_id for run in store.runs()]


def test_a_server_down_longer_than_the_store_waits_is_named_then_forgotten(
    server: PrivateServer, run_id: str
) -> None:
    store, state = checkpoints.PostgresStore(server.dsn, reconnect_seconds=0.3), _state(run_id, 1)
    store.save(state)
    server.stop()
    try:
        with pytest.raises(checkpoints.StoreUnavailableError) as raised:
            store.save(_grown(state, 2))
        with pytest.raises(checkpoints.StoreUnavailableError, match=f"load run '{run_id}'"):
            store.load(run_id)
    finally:
        server.start()
    message = str(raised.value)
    assert f"PostgresStore(postgres@127.0.0.1:{server.port}/postgres)" in message
    assert f"save run '{run_id}'" in message and "chains.resume" in message
    _no_password(raised.value)
    store.save(state)  # the server is back: so is the store
    assert len(store.load(run_id).steps) == 2


def test_a_held_run_keeps_its_hold_across_a_restart(server: PrivateServer, run_id: str) -> None:
    store, other = (checkpoints.PostgresStore(server.dsn) for _ in range(2))
    state = _state(run_id, 1)
    store.save(state)
    store.acquire(run_id)
    server.restart()
    store.save(_grown(state, 2))  # the lease is in the run's row: the restart kept it
    with pytest.raises(checkpoints.RunLockedError):
        other.acquire(run_id)
    store.release(run_id)
    other.acquire(run_id)
    other.release(run_id)


def test_a_hold_taken_over_while_the_server_was_down_refuses_the_next_save(
    server: PrivateServer, run_id: str
) -> None:
    # A reconnect and a repeated save do not get round the lease: the save is refused.
    store = checkpoints.PostgresStore(server.dsn, lease_seconds=0)  # expired at once
    other = checkpoints.PostgresStore(server.dsn)
    state = _state(run_id, 1)
    store.save(state)
    store.acquire(run_id)
    server.restart()
    other.acquire(run_id)  # the hold expired: another process takes the run
    with pytest.raises(checkpoints.RunTakenOverError, match=run_id):
        store.save(_grown(state, 2))
    assert len(other.load(run_id).steps) == 1


def _restarting_run(server: PrivateServer, mode: str, run_id: str) -> Any:
    calls: list[str] = []

    @tools.tool
    def pay(amount: str) -> str:
        """Pays an amount."""
        calls.append(amount)
        server.restart()  # the database restarts while the run is in its step
        return f"paid {amount}"

    llm = FakeLLM(
        [
            'Action: pay\nAction Input: {"amount": "10"}',
            'Action: pay\nAction Input: {"amount": "20"}',
            "Final Answer: paid twice",
        ]
    )
    store = checkpoints.PostgresStore(server.dsn)
    executor = agents.Executor(agents.OneShotAgent(llm, [pay]), checkpointer=store)
    with checkpoints.named_run(run_id):
        if mode == "async":
            answer = asyncio.run(chains.arun(executor, "pay twice"))
        else:
            answer = chains.run(executor, "pay twice")
    return answer, calls, store.load(run_id)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_continues_through_restarts_in_its_steps(
    server: PrivateServer, run_id: str, mode: str
) -> None:
    answer, calls, saved = _restarting_run(server, mode, run_id)
    assert answer == "paid twice" and calls == ["10", "20"]
    assert saved.status == "finished" and [s.observation for s in saved.steps] == [
        "paid 10",
        "paid 20",
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_whose_server_stays_down_fails_named_and_resumes_without_repeating(
    server: PrivateServer, run_id: str, mode: str
) -> None:
    calls: list[str] = []

    @tools.tool
    def pay(amount: str) -> str:
        """Pays an amount."""
        calls.append(amount)
        if amount == "20":
            server.stop()  # down for longer than the store waits: its completion is not saved
        return f"paid {amount}"

    def executor(*script: str) -> agents.Executor:
        agent = agents.OneShotAgent(FakeLLM([*script, "Final Answer: paid twice"]), [pay])
        return agents.Executor(agent, checkpointer=store)

    payments = (
        'Action: pay\nAction Input: {"amount": "10"}',
        'Action: pay\nAction Input: {"amount": "20"}',
    )

    store = checkpoints.PostgresStore(server.dsn, reconnect_seconds=0.3)
    try:
        with (
            checkpoints.named_run(run_id),
            pytest.raises(checkpoints.StoreUnavailableError, match=f"save run '{run_id}'"),
        ):
            if mode == "async":
                asyncio.run(chains.arun(executor(*payments), "pay twice"))
            else:
                chains.run(executor(*payments), "pay twice")
    finally:
        server.start()
    # The same store, once the server is back: the call cut short is named, not repeated.
    with pytest.raises(checkpoints.InterruptedCallError, match="'pay'"):
        chains.resume(executor(), run_id)
    if mode == "async":
        outputs = asyncio.run(chains.aresume(executor(), run_id, interrupted="skip"))
    else:
        outputs = chains.resume(executor(), run_id, interrupted="skip")
    assert outputs["output"] == "paid twice" and calls == ["10", "20"]


@contextlib.contextmanager
def _through_proxy(
    dsn: str, idle_seconds: float
) -> Iterator[tuple[IdleResetProxy, checkpoints.PostgresStore]]:
    """A store whose connections go through an idle_reset_proxy to the server of `dsn`."""
    port = int(str(psycopg.conninfo.conninfo_to_dict(dsn).get("port") or 5432))
    with idle_reset_proxy(port, idle_seconds) as proxy:
        proxied = psycopg.conninfo.make_conninfo(dsn, host="127.0.0.1", port=proxy.port)
        yield proxy, checkpoints.PostgresStore(proxied)


def test_a_connection_reset_after_an_idle_spell_is_reconnected(run_id: str) -> None:
    dsn = postgres_dsn()
    with _through_proxy(dsn, idle_seconds=0.2) as (proxy, store):
        state = _state(run_id, 1)
        store.save(state)
        store.acquire(run_id)
        for steps in (2, 3):
            time.sleep(0.4)  # longer idle than the proxy allows: the next request is reset
            store.save(_grown(state, steps))
        time.sleep(0.4)
        assert len(store.load(run_id).steps) == 3
        assert proxy.resets >= 3
        store.release(run_id)


@pytest.mark.parametrize("held", [True, False])
def test_a_save_whose_commit_was_not_acknowledged_counts_as_saved_on_its_retry(
    run_id: str, held: bool
) -> None:
    """The server committed the save, then the connection went before its reply came: the
    save, tried again, finds its own write (its version, under its lease; or, for a run not
    held, its very state) and is done, not refused as stale."""
    dsn = postgres_dsn()
    with _through_proxy(dsn, idle_seconds=600) as (proxy, store):
        state = _state(run_id, 1)
        if held:
            store.save(state)
            store.acquire(run_id)
            _grown(state, 2)
        proxy.cut_after = b"COMMIT"
        store.save(state)
        assert proxy.cut_after is None and proxy.resets == 0  # cut: the reply never came
        saved = state.saved
        store.save(_grown(state, 3))  # the next save goes over the version it wrote
        loaded = checkpoints.PostgresStore(dsn).load(run_id)
        assert (loaded.saved, len(loaded.steps)) == (saved + 1, 3)


def test_a_hold_whose_commit_was_not_acknowledged_is_taken_on_its_retry(run_id: str) -> None:
    """The server committed the lease, then the connection went before its reply came: the
    retry finds the lease it wrote itself, not another process's hold."""
    dsn = postgres_dsn()
    with _through_proxy(dsn, idle_seconds=600) as (proxy, store):
        state = _state(run_id, 1)
        store.save(state)
        proxy.cut_after = b"COMMIT"
        store.acquire(run_id)
        assert proxy.cut_after is None  # cut: the reply never came
        store.save(_grown(state, 2))  # under the lease it holds
        with pytest.raises(checkpoints.RunLockedError):
            checkpoints.PostgresStore(dsn).acquire(run_id)
        store.release(run_id)
        checkpoints.PostgresStore(dsn).acquire(run_id)


def test_a_refused_login_is_named_at_once_without_the_password() -> None:
    dsn = psycopg.conninfo.make_conninfo(postgres_dsn(), password=PASSWORD)
    with pytest.raises(checkpoints.StoreError, match="refused the login") as raised:
        checkpoints.PostgresStore(dsn)  # a login refused is not retried for 10 s
    assert not isinstance(raised.value, checkpoints.StoreUnavailableError)
    _no_password(raised.value)
    missing = psycopg.conninfo.make_conninfo(postgres_dsn(), dbname="no_such_database")
    with pytest.raises(checkpoints.StoreError, match="does not exist"):
        checkpoints.PostgresStore(missing)


def test_no_server_at_all_is_unavailable(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dsn = f"postgresql://app:{PASSWORD}@127.0.0.1:{port}/db"
    with pytest.raises(checkpoints.StoreUnavailableError, match="open the database") as raised:
        checkpoints.PostgresStore(dsn, reconnect_seconds=0.2)
    _no_password(raised.value)


def test_a_dsn_never_shows_its_password() -> None:
    postgres_dsn()
    for dsn in (
        f"postgresql://app:{PASSWORD}@db.example/app?bogus=1",
        f"user=app password {PASSWORD}",
    ):
        with pytest.raises(checkpoints.errors.CheckpointConfigError) as raised:
            checkpoints.PostgresStore(dsn)
        _no_password(raised.value)
    store = checkpoints.PostgresStore(postgres_dsn())
    assert "ck:ck" not in repr(store) and repr(store).startswith("PostgresStore(ck@")
    llm = FakeLLM(["Final Answer: -"])
    with pytest.raises(agents.errors.AgentTypeError) as refused:
        agents.Executor(
            agents.OneShotAgent(llm, [tools.Calculator()]),
            checkpointer=f"postgresql://app:{PASSWORD}@db.example/app",  # type: ignore[arg-type]
        )
    assert "PostgresStore" in str(refused.value)
    _no_password(refused.value)


def test_bad_values_and_foreign_tables_are_named(run_id: str) -> None:
    dsn = postgres_dsn()
    store = checkpoints.PostgresStore(dsn)
    with pytest.raises(checkpoints.StoreError, match="NUL character"):
        store.save(_state("run\x00id", 1))
    with pytest.raises(checkpoints.StoreError, match="too large"):
        store.save(_state(secrets.token_hex(10_000), 1))  # past an index entry's limit
    with pytest.raises(checkpoints.StateFormatError, match="not valid Unicode"):
        store.save(_state("run\udce9", 1))
    store.save(_state(run_id, 1))  # the store goes on after each
    schema = f"other_{run_id.replace('-', '_')}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        admin.execute(f"CREATE TABLE {schema}.chainkit_runs (run_id TEXT PRIMARY KEY, n INT)")
    try:
        foreign = checkpoints.PostgresStore(
            psycopg.conninfo.make_conninfo(dsn, options=f"-csearch_path={schema}")
        )
        with pytest.raises(checkpoints.StoreError, match="not the ones this version"):
            foreign.save(_state(run_id, 1))
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_a_read_only_server_is_reconnected_to_then_named() -> None:
    # What a DSN pointing at the old primary, now a standby, gets after a failover.
    dsn = psycopg.conninfo.make_conninfo(
        postgres_dsn(), options="-cdefault_transaction_read_only=on"
    )
    with pytest.raises(checkpoints.StoreUnavailableError, match="read-only standby") as raised:
        checkpoints.PostgresStore(dsn, reconnect_seconds=0.3)
    assert "open the database" in str(raised.value)
    assert "target_session_attrs=read-write" in str(raised.value)


def test_a_closed_store_says_so(run_id: str) -> None:
    store = checkpoints.PostgresStore(postgres_dsn())
    store.close()
    with pytest.raises(checkpoints.StoreError, match="closed"):
        store.load(run_id)


def _fork_and_release(dsn: str, run_id: str) -> list[Any]:
    """In a process of its own (a fork of the threaded test process might hang): a store
    holds a run, then forks; the child releases the run and saves another. Whether the
    parent still holds its run, and the child's run's steps."""
    store, other = checkpoints.PostgresStore(dsn), checkpoints.PostgresStore(dsn)
    state = _state(run_id, 1)
    store.save(state)
    store.acquire(run_id)
    child = os.fork()  # as multiprocessing's "fork" does with a store made before it
    if child == 0:
        try:
            store.release(run_id)  # not its hold: the parent's stays
            store.save(_state(f"{run_id}-child", 2))
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    try:
        other.acquire(run_id)
    except checkpoints.RunLockedError:
        held = "held by the parent"
    else:
        held = "released by the child"
    store.save(_grown(state, 3))  # on its own connection, under its lease, untouched by the child
    return [held, len(other.load(f"{run_id}-child").steps)]


def test_a_forked_child_uses_a_connection_of_its_own_and_none_of_the_parents_holds(
    run_id: str,
) -> None:
    _, outcome = forked.run(_fork_and_release, postgres_dsn(), run_id)
    assert outcome == ["held by the parent", 2]


def test_threads_saving_through_a_restart_all_land(server: PrivateServer) -> None:
    store = checkpoints.PostgresStore(server.dsn)
    ids = [f"thread-{i}-{time.monotonic_ns()}" for i in range(4)]
    failures: list[BaseException] = []

    def save_all(run: str) -> None:
        try:
            state = _state(run, 1)
            store.save(state)
            for steps in range(2, 6):
                store.save(_grown(state, steps))
        except BaseException as error:
            failures.append(error)

    workers = [threading.Thread(target=save_all, args=(run,)) for run in ids]
    for worker in workers:
        worker.start()
    server.restart()
    for worker in workers:
        worker.join(60)
    assert failures == []
    assert [len(store.load(run).steps) for run in ids] == [5] * 4
