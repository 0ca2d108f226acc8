"""Leases on runs, as the SQL stores keep them in a run's row: a random token per hold, the
holding process named by host, boot and start time (a PID alone is reused: a restarted
container's app is PID 1 again), and when the hold expires unless its holder saves again.

A hold is gone, and the run may be taken over, once it expired, or at once when its holder
was on this machine and its process is dead, was restarted or the machine rebooted. A holder
on another machine is known to be gone only by expiry."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from chainkit.checkpoints.errors import CheckpointConfigError, RunLockedError, RunNotFoundError

LEASE_COLUMNS = {
    "lease_token": "TEXT",
    "lease_host": "TEXT",
    "lease_boot": "TEXT",
    "lease_pid": "INTEGER",
    "lease_started": "TEXT",
    "lease_expires": "DOUBLE PRECISION",
    "version": "INTEGER NOT NULL DEFAULT 0",
}
"""The columns of chainkit_runs that hold a run's lease and the version of its record (added
to a table an older chainkit made)."""


def added_columns(present: set[str]) -> list[str]:
    """The statements adding the columns of LEASE_COLUMNS missing from `present`."""
    return [
        f"ALTER TABLE chainkit_runs ADD COLUMN {name} {kind}"
        for name, kind in LEASE_COLUMNS.items()
        if name not in present
    ]


READ_LEASE = (
    "SELECT lease_token, lease_host, lease_boot, lease_pid, lease_started, lease_expires "
    "FROM chainkit_runs WHERE run_id = ?"
)
TAKE_LEASE = (
    "UPDATE chainkit_runs SET lease_token = ?, lease_host = ?, lease_boot = ?, lease_pid = ?, "
    "lease_started = ?, lease_expires = ? WHERE run_id = ?"
)
END_LEASE = (
    "UPDATE chainkit_runs SET lease_token = NULL, lease_host = NULL, lease_boot = NULL, "
    "lease_pid = NULL, lease_started = NULL, lease_expires = NULL "
    "WHERE run_id = ? AND lease_token = ?"
)
DEFAULT_SECONDS = 300.0


@dataclass(frozen=True, slots=True)
class Process:
    """A process, as a lease names it."""

    host: str
    boot: str
    """The machine's boot id ("" where the system gives none)."""
    pid: int
    started: str
    """When the process started, in the kernel's clock ticks since boot ("" where unknown)."""


def this_process() -> Process:
    return _process(os.getpid())


@cache
def _process(pid: int) -> Process:  # by pid: a forked child is a process of its own
    return Process(socket.gethostname(), _boot_id(), pid, start_time(pid))


@cache
def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
            return file.read().strip()
    except OSError:
        return ""


def start_time(pid: int) -> str:
    """Process `pid`'s start time ("" when unknown or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
            stat = file.read()
    except OSError:
        return ""
    # The command name (field 2) is in parentheses and may hold spaces; starttime is field 22.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else ""


def is_gone(row: tuple[object, ...], now: float) -> bool:
    """Whether the hold in `row` (READ_LEASE's columns) no longer stands."""
    token, host, boot, pid, started, expires = row
    if token is None:
        return True
    if isinstance(expires, int | float) and expires <= now:
        return True
    here = this_process()
    if host != here.host:
        return False  # its process cannot be seen from here: only expiry ends it
    if boot != here.boot:
        return True  # this machine rebooted since
    if not isinstance(pid, int) or not _alive(pid):
        return True
    return bool(started) and started != start_time(pid)  # the PID went to another process


def holder_of(row: tuple[object, ...]) -> str:
    """The holder in `row`, for an error message."""
    _, host, _, pid, _, _ = row
    return f"process {pid} on {host}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def take(
    execute: Callable[[str, tuple[Any, ...]], Any],
    read_lease: str,
    take_lease: str,
    run_id: str,
    seconds: float,
    ours: str | None = None,
) -> str:
    """Takes the run's lease for this process for `seconds`, inside the store's transaction
    (READ_LEASE and TAKE_LEASE in its SQL); its token. Raises RunLockedError, naming the
    holder, while another hold stands (not `ours`: the store's own, which it could not end).
    """
    row = execute(read_lease, (run_id,)).fetchone()
    if row is None:
        raise RunNotFoundError(f"no run {run_id!r} in the checkpoint store")
    now = time.time()
    if row[0] != ours and not is_gone(row, now):
        raise RunLockedError(
            f"run {run_id!r} is held by {holder_of(row)}, which is running or resuming it"
        )
    import uuid  # loaded by the first hold, not with the store

    token, here = uuid.uuid4().hex, this_process()
    execute(
        take_lease, (token, here.host, here.boot, here.pid, here.started, now + seconds, run_id)
    )
    return token


def checked_seconds(seconds: object) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds >= 0:
        raise CheckpointConfigError(
            f"lease_seconds must be a number of seconds >= 0, got {seconds!r:.60}"
        )
    return float(seconds)
