"""PostgresStore: runs' states in PostgreSQL (psycopg 3, the `chainkit[postgres]` extra), for
runs resumed on any machine."""

from __future__ import annotations

import threading
import time
from typing import Any

from chainkit.checkpoints._rows import LIST_RUNS, run_row, state_of, step_rows
from chainkit.checkpoints.errors import CheckpointConfigError, RunLockedError, RunNotFoundError
from chainkit.checkpoints.state import RunState
from chainkit.checkpoints.store import RunSummary

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chainkit_runs (
    run_id TEXT PRIMARY KEY, agent TEXT NOT NULL, header TEXT NOT NULL, progress TEXT NOT NULL,
    status TEXT NOT NULL, steps INTEGER NOT NULL, updated DOUBLE PRECISION NOT NULL);
CREATE TABLE IF NOT EXISTS chainkit_steps (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, step TEXT NOT NULL, PRIMARY KEY (run_id, seq));
"""
_SAVE_RUN = """
INSERT INTO chainkit_runs (run_id, agent, header, progress, status, steps, updated)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (run_id) DO UPDATE SET progress = excluded.progress, status = excluded.status,
    steps = excluded.steps, updated = excluded.updated
"""
_SAVE_STEP = """
INSERT INTO chainkit_steps VALUES (%s, %s, %s)
ON CONFLICT (run_id, seq) DO UPDATE SET step = excluded.step
"""
_LOCK = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise CheckpointConfigError(
            'PostgresStore needs psycopg 3: pip install "chainkit[postgres]"'
        ) from None
    return psycopg


class PostgresStore:
    """Keeps each run as a row and each of its steps as a row, in the PostgreSQL database at
    `dsn` (a libpq connection string or URL). A save is one transaction. A run is held with a
    session advisory lock on a connection of its own, which the server drops when the
    holding process dies."""

    def __init__(self, dsn: str) -> None:
        psycopg = _psycopg()
        self._dsn = dsn
        self._lock = threading.Lock()
        self._connection = psycopg.connect(dsn, autocommit=True)
        with self._connection.transaction():
            self._connection.execute("SELECT pg_advisory_xact_lock(hashtext('chainkit_schema'))")
            for statement in filter(str.strip, _SCHEMA.split(";")):
                self._connection.execute(statement)
        self._saved_steps: dict[str, int] = {}
        self._holds: dict[str, Any] = {}

    def __repr__(self) -> str:
        return "PostgresStore(...)"  # the DSN may hold a password

    def close(self) -> None:
        with self._lock:
            for connection in self._holds.values():
                connection.close()
            self._holds.clear()
            self._connection.close()

    def save(self, state: RunState) -> None:
        with self._lock:
            connection = self._connection
            start = self._saved_steps.get(state.run_id)
            if start is None:
                row = connection.execute(
                    "SELECT steps FROM chainkit_runs WHERE run_id = %s", (state.run_id,)
                ).fetchone()
                start = 0 if row is None else int(row[0])
            with connection.transaction():
                connection.execute(_SAVE_RUN, run_row(state, time.time()))
                if start > len(state.steps):  # an earlier state of the run, saved again
                    connection.execute(
                        "DELETE FROM chainkit_steps WHERE run_id = %s AND seq >= %s",
                        (state.run_id, len(state.steps)),
                    )
                    start = len(state.steps)
                rows = step_rows(state, start)
                if rows:
                    with connection.cursor() as cursor:
                        cursor.executemany(_SAVE_STEP, rows)
            self._saved_steps[state.run_id] = len(state.steps)

    def load(self, run_id: str) -> RunState:
        with self._lock, self._connection.transaction():
            row = self._connection.execute(
                "SELECT header, progress FROM chainkit_runs WHERE run_id = %s", (run_id,)
            ).fetchone()
            steps = self._connection.execute(
                "SELECT step FROM chainkit_steps WHERE run_id = %s ORDER BY seq", (run_id,)
            ).fetchall()
        state = state_of(run_id, row, steps)
        self._saved_steps[run_id] = len(state.steps)
        return state

    def runs(self) -> list[RunSummary]:
        with self._lock:
            rows = self._connection.execute(LIST_RUNS).fetchall()
        return [RunSummary(*row) for row in rows]

    def acquire(self, run_id: str) -> None:
        with self._lock:
            if run_id in self._holds:
                raise RunLockedError(f"run {run_id!r} is held already, by this store")
            found = self._connection.execute(
                "SELECT 1 FROM chainkit_runs WHERE run_id = %s", (run_id,)
            ).fetchone()
            if found is None:
                raise RunNotFoundError(f"no run {run_id!r} in the checkpoint store")
            holder = _psycopg().connect(self._dsn, autocommit=True)
            (taken,) = holder.execute(_LOCK, (run_id,)).fetchone()
            if not taken:
                holder.close()
                raise RunLockedError(
                    f"run {run_id!r} is held by another process, which is running or resuming it"
                )
            self._holds[run_id] = holder

    def release(self, run_id: str) -> None:
        with self._lock:
            holder = self._holds.pop(run_id, None)
        if holder is not None:
            holder.close()
