"""Leases on runs, for SQLite and PostgreSQL alike: a hold names its process by more than a
PID, so a run is taken over after a container restart or from another host once the hold
expired, and the holder taken over is fenced: its later saves are refused."""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from typing import Any

import pytest

from chainkit import checkpoints
from chainkit.checkpoints._lease import start_time
from tests.support import durable_runs
from tests.support.durable_runs import StoreSpec


def _state(run_id: str) -> checkpoints.RunState:
    return checkpoints.RunState(run_id, "OneShotAgent", ["note"], {"input": "q"})


def _boot_id() -> str:
    with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
        return file.read().strip()


def _set_lease(spec: StoreSpec, run_id: str, lease: tuple[object, ...]) -> None:
    """Writes a hold into the run's row, as another process would have left it: token, host,
    boot id, pid, start time, expiry."""
    kind, where = spec
    columns = "lease_token, lease_host, lease_boot, lease_pid, lease_started, lease_expires"
    if kind == "sqlite":
        with sqlite3.connect(where) as connection:
            connection.execute(
                f"UPDATE chainkit_runs SET ({columns}) = (?, ?, ?, ?, ?, ?) WHERE run_id = ?",
                (*lease, run_id),
            )
        return
    import psycopg

    with psycopg.connect(where, autocommit=True) as connection:
        connection.execute(
            f"UPDATE chainkit_runs SET ({columns}) = (%s, %s, %s, %s, %s, %s) WHERE run_id = %s",
            (*lease, run_id),
        )


def _saved(spec: StoreSpec, run_id: str) -> Any:
    store = durable_runs.open_store(spec)
    store.save(_state(run_id))
    return store


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")
def test_a_hold_whose_pid_now_names_another_process_is_taken_over(
    store_spec: StoreSpec, run_id: str
) -> None:
    """A restarted container's app has the PID of the one that died (1, say): the hold names
    the process's start time too, so the live process with its PID is not taken for it."""
    store = _saved(store_spec, run_id)
    here, pid = socket.gethostname(), os.getpid()  # alive, but started at another time
    started_then = str(int(start_time(pid)) - 1000)
    _set_lease(store_spec, run_id, ("old", here, _boot_id(), pid, started_then, time.time() + 1e6))
    store.acquire(run_id)
    store.save(store.load(run_id))
    store.release(run_id)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")
def test_a_live_holder_of_this_machine_keeps_its_run(store_spec: StoreSpec, run_id: str) -> None:
    store = _saved(store_spec, run_id)
    pid = os.getppid()
    lease = ("old", socket.gethostname(), _boot_id(), pid, start_time(pid), time.time() + 1e6)
    _set_lease(store_spec, run_id, lease)
    with pytest.raises(checkpoints.RunLockedError, match=f"process {pid} on "):
        store.acquire(run_id)


def test_a_hold_from_another_host_stands_until_it_expires(
    store_spec: StoreSpec, run_id: str
) -> None:
    store = _saved(store_spec, run_id)
    _set_lease(store_spec, run_id, ("old", "elsewhere", "b", 7, "1", time.time() + 1e6))
    with pytest.raises(checkpoints.RunLockedError, match="process 7 on elsewhere"):
        store.acquire(run_id)
    with pytest.raises(checkpoints.RunLockedError, match=run_id):
        store.save(store.load(run_id))  # nor can it be written without the hold
    _set_lease(store_spec, run_id, ("old", "elsewhere", "b", 7, "1", time.time() - 1))
    store.acquire(run_id)  # it expired: its holder stopped saving
    store.save(store.load(run_id))


def test_a_holder_taken_over_is_fenced_and_releases_nothing_of_the_new_holder(
    store_spec: StoreSpec, run_id: str
) -> None:
    first, second, third = (durable_runs.open_store(store_spec) for _ in range(3))
    state = _state(run_id)
    first.save(state)
    first.acquire(run_id)
    first.save(state)
    [token] = first._held.values()
    here = (token, socket.gethostname(), _boot_id(), os.getpid(), start_time(os.getpid()))
    _set_lease(store_spec, run_id, (*here, time.time() - 1))  # as time would leave it
    second.acquire(run_id)  # the first stopped renewing: its hold expired
    taken = second.load(run_id)
    second.save(taken)
    with pytest.raises(checkpoints.RunTakenOverError, match=run_id):
        first.save(state)
    first.release(run_id)
    with pytest.raises(checkpoints.RunLockedError, match=run_id):
        third.acquire(run_id)  # the second holds it still
    second.save(taken)
    assert second.load(run_id).saved == 4


def test_lease_seconds_out_of_range_are_refused(tmp_path: Any) -> None:
    with pytest.raises(checkpoints.errors.CheckpointConfigError, match="lease_seconds"):
        checkpoints.SQLiteStore(tmp_path / "runs.db", lease_seconds=-1)
