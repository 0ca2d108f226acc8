"""PostgresStore: runs' states in PostgreSQL (psycopg 3, the `chainkit[postgres]` extra), for
runs resumed on any machine."""

from __future__ import annotations

import threading
import time
from typing import Any

from chainkit.checkpoints import _lease as leases
from chainkit.checkpoints import _rows as rows
from chainkit.checkpoints.errors import CheckpointConfigError, RunLockedError
from chainkit.checkpoints.state import RunState
from chainkit.checkpoints.store import RunSummary

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chainkit_runs (
    run_id TEXT PRIMARY KEY, agent TEXT NOT NULL, header TEXT NOT NULL, progress TEXT NOT NULL,
    status TEXT NOT NULL, steps INTEGER NOT NULL, updated DOUBLE PRECISION NOT NULL);
CREATE TABLE IF NOT EXISTS chainkit_steps (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, step TEXT NOT NULL, PRIMARY KEY (run_id, seq));
"""
_COLUMNS = (
    "SELECT column_name FROM information_schema.columns "
    "WHERE table_name = 'chainkit_runs' AND table_schema = current_schema()"
)
_SAVE_STEP = """
INSERT INTO chainkit_steps VALUES (%s, %s, %s)
ON CONFLICT (run_id, seq) DO UPDATE SET step = excluded.step
"""


def _pg(sql: str) -> str:
    """The stores' shared SQL with psycopg's placeholders."""
    return sql.replace("?", "%s")


_SQL = rows.Dialect(
    _pg(rows.UPDATE_RUN.format(same="IS NOT DISTINCT FROM")),
    _pg(rows.READ_VERSION),
    _pg(rows.INSERT_RUN),
)
_LOAD_RUN = _pg(rows.LOAD_RUN)
_READ_LEASE = _pg(leases.READ_LEASE) + " FOR UPDATE"
_TAKE_LEASE, _END_LEASE = _pg(leases.TAKE_LEASE), _pg(leases.END_LEASE)


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
    `dsn` (a libpq connection string or URL). A save is one transaction. A run is held by
    one store at a time, for `lease_seconds` after each save, with a lease in its row naming
    the holding process: a hold whose process died (or whose machine rebooted) is taken over
    at once, one held on another machine once it expired."""

    def __init__(self, dsn: str, *, lease_seconds: float = leases.DEFAULT_SECONDS) -> None:
        psycopg = _psycopg()
        self._lease_seconds = leases.checked_seconds(lease_seconds)
        self._lock = threading.Lock()
        self._connection = psycopg.connect(dsn, autocommit=True)
        with self._connection.transaction():
            self._connection.execute("SELECT pg_advisory_xact_lock(hashtext('chainkit_schema'))")
            for statement in filter(str.strip, _SCHEMA.split(";")):
                self._connection.execute(statement)
            # Added to an older chainkit's table only: ALTER TABLE locks out every run's save.
            present = {name for (name,) in self._connection.execute(_COLUMNS)}
            for statement in leases.added_columns(present):
                self._connection.execute(statement)
        self._saved_steps: dict[str, int] = {}
        self._held: dict[str, str] = {}
        """This store's lease token on each run it holds."""

    def __repr__(self) -> str:
        return "PostgresStore(...)"  # the DSN may hold a password

    def close(self) -> None:
        with self._lock:
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
            state.saved += 1
            try:
                with connection.transaction():
                    now, held = time.time(), self._held.get(state.run_id)
                    expires = now + self._lease_seconds
                    rows.write_run(connection.execute, _SQL, state, now, expires, held)
                    if start > len(state.steps):  # an earlier state of the run, saved again
                        connection.execute(
                            "DELETE FROM chainkit_steps WHERE run_id = %s AND seq >= %s",
                            (state.run_id, len(state.steps)),
                        )
                        start = len(state.steps)
                    added = rows.step_rows(state, start)
                    if added:
                        with connection.cursor() as cursor:
                            cursor.executemany(_SAVE_STEP, added)
            except BaseException:
                state.saved -= 1
                raise
            self._saved_steps[state.run_id] = len(state.steps)

    def load(self, run_id: str) -> RunState:
        with self._lock, self._connection.transaction():
            row = self._connection.execute(_LOAD_RUN, (run_id,)).fetchone()
            steps = self._connection.execute(
                "SELECT step FROM chainkit_steps WHERE run_id = %s ORDER BY seq", (run_id,)
            ).fetchall()
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
            with self._connection.transaction():
                execute, seconds = self._connection.execute, self._lease_seconds
                token = leases.take(execute, _READ_LEASE, _TAKE_LEASE, run_id, seconds)
            self._held[run_id] = token

    def release(self, run_id: str) -> None:
        with self._lock:
            token = self._held.pop(run_id, None)
            if token is not None:
                self._connection.execute(_END_LEASE, (run_id, token))
