"""SQLiteStore: runs' states in one SQLite file (stdlib sqlite3, WAL), for the threads and
processes of one machine."""

from __future__ import annotations

import math
import os
import time
from typing import TYPE_CHECKING

from chainkit.checkpoints import _lease as leases
from chainkit.checkpoints import _rows as rows
from chainkit.checkpoints._failures import bad_text, sqlite_failure
from chainkit.checkpoints._store_lock import StoreLock
from chainkit.checkpoints.errors import CheckpointConfigError, RunLockedError, StateFormatError
from chainkit.checkpoints.state import RunState
from chainkit.checkpoints.store import RunSummary

if TYPE_CHECKING:
    import sqlite3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chainkit_runs (
    run_id TEXT PRIMARY KEY, agent TEXT NOT NULL, header TEXT NOT NULL, progress TEXT NOT NULL,
    status TEXT NOT NULL, steps INTEGER NOT NULL, updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS chainkit_steps (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, step TEXT NOT NULL, PRIMARY KEY (run_id, seq));
"""
_SQL = rows.Dialect(
    rows.UPDATE_RUN.format(same="IS"), rows.READ_VERSION, rows.INSERT_RUN, rows.READ_RECORD
)


class SQLiteStore:
    """Keeps each run as a row and each of its steps as a row, in the SQLite database at
    `path` (":memory:" for one process's tests). A save is one transaction; WAL lets readers
    (`chainkit runs list`) in while a run writes. A run is held (`acquire`) by one store at a
    time, for `lease_seconds` after each save; a hold whose process has died (or whose machine
    rebooted) is taken over at once, any other once it expired.

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
        lease_seconds: float = leases.DEFAULT_SECONDS,
        timeout: float = 30.0,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise CheckpointConfigError(
                f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}"
            )
        if not isinstance(timeout, int | float) or not 0 <= timeout < math.inf:
            raise CheckpointConfigError(f"timeout must be seconds >= 0, got {timeout!r}")
        import sqlite3  # loaded when a store is made, not with the agents that may use one

        self.path = os.fspath(path)
        self.timeout = float(timeout)
        self._lease_seconds = leases.checked_seconds(lease_seconds)
        self._lock = StoreLock()
        with _Failing(self, "open the database"):
            self._connection = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=self.timeout
            )
            try:
                self._connection.execute("PRAGMA journal_mode=WAL")
                self._connection.execute(f"PRAGMA synchronous={synchronous}")
                self._connection.executescript(_SCHEMA)
                self._add_lease_columns()
            except BaseException:
                self._connection.close()
                raise
        self._saved_steps: dict[str, int] = {}
        self._held: dict[str, str] = {}
        """This store's lease token on each run it holds."""

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
            state.saved += 1
            try:
                with _Transaction(connection, "BEGIN IMMEDIATE"):
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
                raise
            self._saved_steps[state.run_id] = len(state.steps)

    def load(self, run_id: str) -> RunState:
        with self._lock, _Failing(self, "load run", run_id):
            connection = self._connection
            with _Transaction(connection, "BEGIN"):
                row = connection.execute(rows.LOAD_RUN, (run_id,)).fetchone()
                steps = connection.execute(
                    "SELECT step FROM chainkit_steps WHERE run_id = ? ORDER BY seq", (run_id,)
                ).fetchall()
        state = rows.state_of(run_id, row, steps)
        self._saved_steps[run_id] = len(state.steps)
        return state

    def runs(self) -> list[RunSummary]:
        with self._lock, _Failing(self, "list the runs"):
            listed = self._connection.execute(rows.LIST_RUNS).fetchall()
        return [RunSummary(*row) for row in listed]

    def acquire(self, run_id: str) -> None:
        with self._lock, _Failing(self, "hold run", run_id):
            if run_id in self._held:
                raise RunLockedError(f"run {run_id!r} is held already, by this store")
            execute, seconds = self._connection.execute, self._lease_seconds
            with _Transaction(self._connection, "BEGIN IMMEDIATE"):
                token = leases.take(execute, leases.READ_LEASE, leases.TAKE_LEASE, run_id, seconds)
            self._held[run_id] = token

    def release(self, run_id: str) -> None:
        def release() -> None:
            with _Failing(self, "release run", run_id):
                token = self._held.pop(run_id, None)
                if token is not None:
                    self._connection.execute(leases.END_LEASE, (run_id, token))

        self._lock.later(release)

    def _add_lease_columns(self) -> None:
        """Adds the lease and version columns to a table an older chainkit made."""
        present = {row[1] for row in self._connection.execute("PRAGMA table_info(chainkit_runs)")}
        for statement in leases.added_columns(present):
            self._connection.execute(statement)

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
