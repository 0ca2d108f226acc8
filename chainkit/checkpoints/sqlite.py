"""SQLiteStore: runs' states in one SQLite file (stdlib sqlite3, WAL), for the threads and
processes of one machine."""

from __future__ import annotations

import math
import os
import time
from typing import TYPE_CHECKING

from chainkit.checkpoints._failures import bad_text, sqlite_failure
from chainkit.checkpoints._rows import LIST_RUNS, run_row, state_of, step_rows
from chainkit.checkpoints._store_lock import StoreLock
from chainkit.checkpoints.errors import (
    CheckpointConfigError,
    RunLockedError,
    RunNotFoundError,
    StateFormatError,
)
from chainkit.checkpoints.state import RunState
from chainkit.checkpoints.store import RunSummary

if TYPE_CHECKING:
    import sqlite3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chainkit_runs (
    run_id TEXT PRIMARY KEY, agent TEXT NOT NULL, header TEXT NOT NULL, progress TEXT NOT NULL,
    status TEXT NOT NULL, steps INTEGER NOT NULL, updated REAL NOT NULL,
    lease_owner TEXT, lease_pid INTEGER);
CREATE TABLE IF NOT EXISTS chainkit_steps (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, step TEXT NOT NULL, PRIMARY KEY (run_id, seq));
"""
_SAVE_RUN = """
INSERT INTO chainkit_runs (run_id, agent, header, progress, status, steps, updated)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (run_id) DO UPDATE SET progress = excluded.progress, status = excluded.status,
    steps = excluded.steps, updated = excluded.updated
"""


class SQLiteStore:
    """Keeps each run as a row and each of its steps as a row, in the SQLite database at
    `path` (":memory:" for one process's tests). A save is one transaction; WAL lets readers
    (`chainkit runs list`) in while a run writes. A run is held (`acquire`) by one store at a
    time; a hold whose process has died is taken over.

    `synchronous` is SQLite's setting: "NORMAL" (the default) survives a process crash,
    "FULL" a power loss too, at the cost of a disk flush per step. `timeout` is how long (in
    seconds) a read or write waits while another connection holds the database's write lock.

    A failure of the database raises checkpoints.StoreError naming this store, what it was
    doing and the cause (StoreUnavailableError for a lock held past `timeout`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        timeout: float = 30.0,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise CheckpointConfigError(
                f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}"
            )
        if not isinstance(timeout, int | float) or not 0 <= timeout < math.inf:
            raise CheckpointConfigError(f"timeout must be seconds >= 0, got {timeout!r}")
        import sqlite3  # loaded when a store is made, not with the agents that may use one
        import uuid

        self.path = os.fspath(path)
        self.timeout = float(timeout)
        self._lock = StoreLock()
        with _Failing(self, "open the database"):
            self._connection = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=self.timeout
            )
            try:
                self._connection.execute("PRAGMA journal_mode=WAL")
                self._connection.execute(f"PRAGMA synchronous={synchronous}")
                self._connection.executescript(_SCHEMA)
            except BaseException:
                self._connection.close()
                raise
        self._owner = uuid.uuid4().hex
        self._saved_steps: dict[str, int] = {}
        self._held: set[str] = set()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    def save(self, state: RunState) -> None:
        with self._lock, _Failing(self, "save run", state.run_id):
            start = self._saved_steps.get(state.run_id)
            if start is None:
                start = self._stored_steps(state.run_id)
            connection = self._connection
            with _Transaction(connection, "BEGIN IMMEDIATE"):
                connection.execute(_SAVE_RUN, run_row(state, time.time()))
                if start > len(state.steps):  # an earlier state of the run, saved again
                    connection.execute(
                        "DELETE FROM chainkit_steps WHERE run_id = ? AND seq >= ?",
                        (state.run_id, len(state.steps)),
                    )
                    start = len(state.steps)
                connection.executemany(
                    "INSERT OR REPLACE INTO chainkit_steps VALUES (?, ?, ?)",
                    step_rows(state, start),
                )
            self._saved_steps[state.run_id] = len(state.steps)

    def load(self, run_id: str) -> RunState:
        with self._lock, _Failing(self, "load run", run_id):
            connection = self._connection
            with _Transaction(connection, "BEGIN"):
                row = connection.execute(
                    "SELECT header, progress FROM chainkit_runs WHERE run_id = ?", (run_id,)
                ).fetchone()
                steps = connection.execute(
                    "SELECT step FROM chainkit_steps WHERE run_id = ? ORDER BY seq", (run_id,)
                ).fetchall()
        state = state_of(run_id, row, steps)
        self._saved_steps[run_id] = len(state.steps)
        return state

    def runs(self) -> list[RunSummary]:
        with self._lock, _Failing(self, "list the runs"):
            rows = self._connection.execute(LIST_RUNS).fetchall()
        return [RunSummary(*row) for row in rows]

    def acquire(self, run_id: str) -> None:
        with self._lock, _Failing(self, "hold run", run_id):
            if run_id in self._held:
                raise RunLockedError(f"run {run_id!r} is held already, by this store")
            with _Transaction(self._connection, "BEGIN IMMEDIATE"):
                self._take(run_id)
            self._held.add(run_id)

    def _take(self, run_id: str) -> None:
        row = self._connection.execute(
            "SELECT lease_owner, lease_pid FROM chainkit_runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is None:
            raise RunNotFoundError(f"no run {run_id!r} in the checkpoint store")
        owner, pid = row
        if owner is not None and owner != self._owner and _alive(pid):
            raise RunLockedError(
                f"run {run_id!r} is held by process {pid}, which is running or resuming it"
            )
        self._connection.execute(
            "UPDATE chainkit_runs SET lease_owner = ?, lease_pid = ? WHERE run_id = ?",
            (self._owner, os.getpid(), run_id),
        )

    def release(self, run_id: str) -> None:
        def release() -> None:
            with _Failing(self, "release run", run_id):
                self._held.discard(run_id)
                self._connection.execute(
                    "UPDATE chainkit_runs SET lease_owner = NULL, lease_pid = NULL "
                    "WHERE run_id = ? AND lease_owner = ?",
                    (run_id, self._owner),
                )

        self._lock.later(release)

    def _stored_steps(self, run_id: str) -> int:
        row = self._connection.execute(
            "SELECT steps FROM chainkit_runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is None:
            return 0
        if type(row[0]) is not int:  # SQLite keeps whatever a hand edit wrote
            raise StateFormatError(
                f"run {run_id!r}: its row in the checkpoint store says it has {row[0]!r} steps, "
                "not a number: the database was edited or damaged"
            )
        return row[0]


class _Failing:
    """Raises a database error inside the block as the StoreError naming the store and what
    it was doing (a class: a generator's context manager costs a step's save measurably)."""

    __slots__ = ("doing", "run_id", "store")

    def __init__(self, store: SQLiteStore, doing: str, run_id: str | None = None) -> None:
        self.store = store
        self.doing = doing
        self.run_id = run_id

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        if error is None:
            return
        import sqlite3

        doing = self.doing if self.run_id is None else f"{self.doing} {self.run_id!r}"
        if isinstance(error, sqlite3.Error):
            raise sqlite_failure(repr(self.store), doing, error, self.store.timeout) from error
        if isinstance(error, UnicodeEncodeError):
            raise bad_text(repr(self.store), doing, error) from error


class _Transaction:
    """One transaction, committed when the block ends, else rolled back (unless SQLite, on a
    full disk or an I/O error, rolled it back itself)."""

    __slots__ = ("begin", "connection")

    def __init__(self, connection: sqlite3.Connection, begin: str) -> None:
        self.connection = connection
        self.begin = begin

    def __enter__(self) -> None:
        self.connection.execute(self.begin)

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        try:
            if error is None:
                self.connection.execute("COMMIT")
        finally:
            if self.connection.in_transaction:  # the block or its COMMIT failed
                self.connection.execute("ROLLBACK")


def _alive(pid: int | None) -> bool:
    """Whether process `pid` of this machine still runs (a reaped one does not)."""
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
