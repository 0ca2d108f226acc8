"""PostgresStore: runs' states in PostgreSQL (psycopg 3, the `chainkit[postgres]` extra), for
runs resumed on any machine."""

from __future__ import annotations

import threading
import time
from typing import Any

from chainkit.checkpoints import _lease as leases
from chainkit.checkpoints._rows import (
    INSERT_RUN,
    LIST_RUNS,
    LOAD_RUN,
    READ_VERSION,
    UPDATE_RUN,
    inserted_row,
    refusal,
    state_of,
    step_rows,
    updated_row,
)
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
_ADD_LEASE_COLUMNS = ";".join(
    f"ALTER TABLE chainkit_runs ADD COLUMN IF NOT EXISTS {name} {kind}"
    for name, kind in leases.LEASE_COLUMNS.items()
)
_SAVE_STEP = """
INSERT INTO chainkit_steps VALUES (%s, %s, %s)
ON CONFLICT (run_id, seq) DO UPDATE SET step = excluded.step
"""


def _pg(sql: str) -> str:
    """The stores' shared SQL with psycopg's placeholders."""
    return sql.replace("?", "%s")


_UPDATE_RUN = _pg(UPDATE_RUN.format(same="IS NOT DISTINCT FROM"))
_INSERT_RUN = _pg(INSERT_RUN) + " ON CONFLICT (run_id) DO NOTHING"
_READ_VERSION, _LOAD_RUN = _pg(READ_VERSION), _pg(LOAD_RUN)
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
            for statement in filter(str.strip, (_SCHEMA + _ADD_LEASE_COLUMNS).split(";")):
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
                    self._write_run(state)
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
            except BaseException:
                state.saved -= 1
                raise
            self._saved_steps[state.run_id] = len(state.steps)

    def _write_run(self, state: RunState) -> None:
        """Writes the run's row over the version the state was read as; raises, naming why,
        when the record moved on or is held by another store."""
        now, held = time.time(), self._held.get(state.run_id)
        row = updated_row(state, now, now + self._lease_seconds, held)
        if self._connection.execute(_UPDATE_RUN, row).rowcount == 1:
            return
        stored = self._connection.execute(_READ_VERSION, (state.run_id,)).fetchone()
        if stored is not None:
            raise refusal(state, stored, held)
        inserted = self._connection.execute(_INSERT_RUN, inserted_row(state, now))
        if inserted.rowcount != 1:  # another store inserted it meanwhile
            raise refusal(state, (None, None), held)

    def load(self, run_id: str) -> RunState:
        with self._lock, self._connection.transaction():
            row = self._connection.execute(_LOAD_RUN, (run_id,)).fetchone()
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
            if run_id in self._held:
                raise RunLockedError(f"run {run_id!r} is held already, by this store")
            with self._connection.transaction():
                row = self._connection.execute(_READ_LEASE, (run_id,)).fetchone()
                if row is None:
                    raise RunNotFoundError(f"no run {run_id!r} in the checkpoint store")
                now = time.time()
                if not leases.is_gone(row, now):
                    raise RunLockedError(
                        f"run {run_id!r} is held by {leases.holder_of(row)}, which is running "
                        "or resuming it"
                    )
                token, taking = leases.taking(run_id, now + self._lease_seconds)
                self._connection.execute(_TAKE_LEASE, taking)
            self._held[run_id] = token

    def release(self, run_id: str) -> None:
        with self._lock:
            token = self._held.pop(run_id, None)
            if token is not None:
                self._connection.execute(_END_LEASE, (run_id, token))
