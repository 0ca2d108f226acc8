"""What SQLiteStore and PostgresStore are, written once over the store layer: each run a row,
each of its steps a row, a save one transaction, and a run held by one store at a time."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from chainkit._errors import StoreUnavailableError
from chainkit._store import Caller, Cursor, Database, closed
from chainkit.checkpoints import _lease as leases
from chainkit.checkpoints import _rows as rows
from chainkit.checkpoints.errors import RunLockedError, StateFormatError
from chainkit.checkpoints.state import RunState
from chainkit.checkpoints.store import RunSummary

T = TypeVar("T")

COMPONENT, VERSION = "checkpoints", 1
"""The name and schema version of the tables in the database's chainkit_schema table."""
_TABLES = {
    "sqlite": [
        "CREATE TABLE IF NOT EXISTS chainkit_runs (run_id TEXT PRIMARY KEY, agent TEXT NOT NULL, "
        "header TEXT NOT NULL, progress TEXT NOT NULL, status TEXT NOT NULL, "
        "steps INTEGER NOT NULL, updated REAL NOT NULL)",
    ],
    "postgresql": [
        "CREATE TABLE IF NOT EXISTS chainkit_runs (run_id TEXT PRIMARY KEY, agent TEXT NOT NULL, "
        "header TEXT NOT NULL, progress TEXT NOT NULL, status TEXT NOT NULL, "
        "steps INTEGER NOT NULL, updated DOUBLE PRECISION NOT NULL)",
    ],
}
_STEPS_TABLE = (
    "CREATE TABLE IF NOT EXISTS chainkit_steps (run_id TEXT NOT NULL, seq INTEGER NOT NULL, "
    "step TEXT NOT NULL, PRIMARY KEY (run_id, seq))"
)
for _statements in _TABLES.values():
    _statements.append(_STEPS_TABLE)
_SAVE_STEP = (
    "INSERT INTO chainkit_steps VALUES (?, ?, ?) "
    "ON CONFLICT (run_id, seq) DO UPDATE SET step = excluded.step"
)
RESUME = "the run stays resumable from its last saved step (chains.resume(executor, run_id))"


class SQLStore:
    """A Checkpointer keeping its runs in `database` (closed with the store when `owned`),
    named `name` by its repr and its errors."""

    def __init__(self, database: Database, name: str, lease_seconds: float, owned: bool) -> None:
        self._lease_seconds = leases.checked_seconds(lease_seconds)
        self._db = database
        self._owned = owned
        self._name = name
        self._caller = Caller(
            name, "chainkit_runs and chainkit_steps", RESUME, partial(_bad_text, name)
        )
        self._sql = rows.DIALECTS[database.dialect]
        self._closed = False
        self._saved_steps: dict[str, int] = {}
        self._held: dict[str, str] = {}
        """This store's lease token on each run it holds."""
        self._unreleased: dict[str, str] = {}
        """Its token on each run it let go of while the database was out of reach: the lease
        stands until it expires, or this store takes the run again."""
        self._pid = os.getpid()
        migrate = partial(_add_lease_columns, database)
        database.ensure_table(COMPONENT, VERSION, _TABLES, migrate, by=self._caller)

    def __repr__(self) -> str:
        return self._name  # never a DSN, which may hold a password

    def close(self) -> None:
        with self._db.lock:
            self._closed = True
            if self._owned:
                self._db.close()

    def save(self, state: RunState) -> None:
        def save(cursor: Cursor) -> None:
            start = self._saved_steps.get(state.run_id)
            if start is None:
                start = _stored_steps(cursor, state.run_id)
            now, held = time.time(), self._held.get(state.run_id)
            expires = now + self._lease_seconds
            rows.write_run(cursor.execute, self._sql, state, now, expires, held, cursor.retried)
            if start > len(state.steps):  # an earlier state of the run, saved again
                cursor.execute(
                    "DELETE FROM chainkit_steps WHERE run_id = ? AND seq >= ?",
                    (state.run_id, len(state.steps)),
                )
                start = len(state.steps)
            cursor.executemany(_SAVE_STEP, rows.step_rows(state, start))

        with self._db.lock:
            state.saved += 1
            try:
                self._run(f"save run {state.run_id!r}", save)
            except BaseException:
                state.saved -= 1
                raise
            self._saved_steps[state.run_id] = len(state.steps)

    def load(self, run_id: str) -> RunState:
        def load(cursor: Cursor) -> tuple[tuple[str, str, int] | None, list[tuple[str]]]:
            row = cursor.execute(rows.LOAD_RUN, (run_id,)).fetchone()
            steps = cursor.execute(
                "SELECT step FROM chainkit_steps WHERE run_id = ? ORDER BY seq", (run_id,)
            ).fetchall()
            return row, steps

        with self._db.lock:
            row, steps = self._run(f"load run {run_id!r}", load, write=False)
            state = rows.state_of(run_id, row, steps)
            self._saved_steps[run_id] = len(state.steps)
        return state

    def runs(self) -> list[RunSummary]:
        listed = self._run(
            "list the runs", lambda cursor: cursor.execute(rows.LIST_RUNS).fetchall(), write=False
        )
        return [RunSummary(*row) for row in listed]

    def acquire(self, run_id: str) -> None:
        ours: str | None = None  # this store's token on the run, which a hold of it gives way to

        def take(cursor: Cursor) -> str:
            nonlocal ours
            read, seconds = self._sql.read_lease, self._lease_seconds
            ours = leases.take(cursor.execute, read, leases.TAKE_LEASE, run_id, seconds, ours)
            return ours  # a retry after a lost reply to COMMIT finds this one: its own

        with self._db.lock:
            self._after_fork()
            if run_id in self._held:
                raise RunLockedError(f"run {run_id!r} is held already, by this store")
            ours = self._unreleased.get(run_id)
            self._held[run_id] = self._run(f"hold run {run_id!r}", take)
            self._unreleased.pop(run_id, None)

    def release(self, run_id: str) -> None:
        self._db.lock.later(partial(self._release, run_id))

    def _release(self, run_id: str) -> None:
        self._after_fork()
        token = self._held.pop(run_id, None)
        if token is None or self._closed:
            return
        try:
            self._run(
                f"release run {run_id!r}",
                lambda cursor: cursor.execute(leases.END_LEASE, (run_id, token)),
            )
        except StoreUnavailableError:  # what failed before it (a save) is what the caller hears
            self._unreleased[run_id] = token

    def _run(self, doing: str, work: Callable[[Cursor], T], write: bool = True) -> T:
        """`work` in one transaction of the database, its failures naming this store."""
        if self._closed:
            raise closed(self._caller, doing)
        self._after_fork()
        return self._db.run(doing, work, by=self._caller, write=write)

    def _after_fork(self) -> None:
        """In a process forked from the one that made the store, forgets its holds, which
        stay the parent's."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._held.clear()
            self._unreleased.clear()


def _stored_steps(cursor: Cursor, run_id: str) -> int:
    row = cursor.execute("SELECT steps FROM chainkit_runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return 0
    if type(row[0]) is not int:  # SQLite keeps whatever a hand edit wrote
        raise StateFormatError(
            f"run {run_id!r}: its row in the checkpoint store says it has {row[0]!r} steps, "
            "not a number: the database was edited or damaged"
        )
    return row[0]


def _add_lease_columns(database: Database, cursor: Cursor, recorded: int | None) -> None:
    """Adds the lease and version columns to a table an older chainkit made."""
    for statement in leases.added_columns(database.columns(cursor, "chainkit_runs")):
        cursor.execute(statement)


def _bad_text(store: str, doing: str, error: UnicodeEncodeError) -> StateFormatError:
    """The error for a run id or agent name that is not valid Unicode (a lone surrogate)."""
    return StateFormatError(
        f"{store} could not {doing}: the run's id or agent name is not valid Unicode text "
        f"({error.reason}), so no database can store it"
    )
