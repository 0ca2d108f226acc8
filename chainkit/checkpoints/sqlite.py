"""SQLiteStore: runs' states in one SQLite file (stdlib sqlite3, WAL), for the threads and
processes of one machine."""

from __future__ import annotations

import os
import threading
import time

from chainkit.checkpoints import _lease as leases
from chainkit.checkpoints import _rows as rows
from chainkit.checkpoints.errors import CheckpointConfigError, RunLockedError
from chainkit.checkpoints.state import RunState
from chainkit.checkpoints.store import RunSummary

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chainkit_runs (
    run_id TEXT PRIMARY KEY, agent TEXT NOT NULL, header TEXT NOT NULL, progress TEXT NOT NULL,
    status TEXT NOT NULL, steps INTEGER NOT NULL, updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS chainkit_steps (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, step TEXT NOT NULL, PRIMARY KEY (run_id, seq));
"""
_SQL = rows.Dialect(rows.UPDATE_RUN.format(same="IS"), rows.READ_VERSION, rows.INSERT_RUN)


class SQLiteStore:
    """Keeps each run as a row and each of its steps as a row, in the SQLite database at
    `path` (":memory:" for one process's tests). A save is one transaction; WAL lets readers
    (`chainkit runs list`) in while a run writes. A run is held (`acquire`) by one store at a
    time, for `lease_seconds` after each save; a hold whose process has died (or whose machine
    rebooted) is taken over at once, any other once it expired.

    `synchronous` is SQLite's setting: "NORMAL" (the default) survives a process crash,
    "FULL" a power loss too, at the cost of a disk flush per step.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        lease_seconds: float = leases.DEFAULT_SECONDS,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise CheckpointConfigError(
                f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}"
            )
        import sqlite3  # loaded when a store is made, not with the agents that may use one

        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute(f"PRAGMA synchronous={synchronous}")
        self._connection.executescript(_SCHEMA)
        self._add_lease_columns()
        self._lease_seconds = leases.checked_seconds(lease_seconds)
        self._saved_steps: dict[str, int] = {}
        self._held: dict[str, str] = {}
        """This store's lease token on each run it holds."""

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    def save(self, state: RunState) -> None:
        with self._lock:
            start = self._saved_steps.get(state.run_id)
            if start is None:
                start = self._stored_steps(state.run_id)
            connection = self._connection
            connection.execute("BEGIN IMMEDIATE")
            state.saved += 1
            try:
                now, held = time.time(), self._held.get(state.run_id)
                expires = now + self._lease_seconds
                rows.write_run(connection.execute, _SQL, state, now, expires, held)
                if start > len(state.steps):  # an earlier state of the run, saved again
                    connection.execute(
                        "DELETE FROM chainkit_steps WHERE run_id = ? AND seq >= ?",
                        (state.run_id, len(state.steps)),
                    )
                    start = len(state.steps)
                connection.executemany(
                    "INSERT OR REPLACE INTO chainkit_steps VALUES (?, ?, ?)",
                    rows.step_rows(state, start),
                )
            except BaseException:
                state.saved -= 1
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
            self._saved_steps[state.run_id] = len(state.steps)

    def load(self, run_id: str) -> RunState:
        with self._lock:
            connection = self._connection
            connection.execute("BEGIN")
            try:
                row = connection.execute(rows.LOAD_RUN, (run_id,)).fetchone()
                steps = connection.execute(
                    "SELECT step FROM chainkit_steps WHERE run_id = ? ORDER BY seq", (run_id,)
                ).fetchall()
            finally:
                connection.execute("COMMIT")
        state = rows.state_of(run_id, row, steps)
        self._saved_steps[run_id] = len(state.steps)
        return state

    def runs(self) -> list[RunSummary]:
        with self._lock:
            listed = self._connection.execute(rows.LIST_RUNS).fetchall()
        return [RunSummary(*row) for row in listed]

    def acquire(self, run_id: str) -> None:
        with self._lock:
            if run_id in self._held:
                raise RunLockedError(f"run {run_id!r} is held already, by this store")
            connection = self._connection
            connection.execute("BEGIN IMMEDIATE")
            try:
                self._take(run_id)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def _take(self, run_id: str) -> None:
        execute, seconds = self._connection.execute, self._lease_seconds
        token = leases.take(execute, leases.READ_LEASE, leases.TAKE_LEASE, run_id, seconds)
        self._held[run_id] = token

    def release(self, run_id: str) -> None:
        with self._lock:
            token = self._held.pop(run_id, None)
            if token is not None:
                self._connection.execute(leases.END_LEASE, (run_id, token))

    def _add_lease_columns(self) -> None:
        """Adds the lease and version columns to a table an older chainkit made."""
        present = {row[1] for row in self._connection.execute("PRAGMA table_info(chainkit_runs)")}
        for statement in leases.added_columns(present):
            self._connection.execute(statement)

    def _stored_steps(self, run_id: str) -> int:
        row = self._connection.execute(
            "SELECT steps FROM chainkit_runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        return 0 if row is None else int(row[0])
