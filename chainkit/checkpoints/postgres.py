"""PostgresStore: runs' states in PostgreSQL (psycopg 3, the `chainkit[postgres]` extra), for
runs resumed on any machine."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from chainkit.checkpoints._failures import (
    LOGIN_REFUSALS,
    READ_ONLY,
    bad_text,
    postgres_failure,
)
from chainkit.checkpoints._rows import LIST_RUNS, run_row, state_of, step_rows
from chainkit.checkpoints.errors import (
    CheckpointConfigError,
    RunLockedError,
    RunNotFoundError,
    StoreError,
)
from chainkit.checkpoints.state import RunState
from chainkit.checkpoints.store import RunSummary

T = TypeVar("T")

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
_CONNECT_TIMEOUT = 10
"""Seconds a connection attempt may take when the DSN sets no connect_timeout: libpq's
default is to wait for as long as TCP does, minutes for a host that vanished."""


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
    `dsn` (a libpq connection string or URL). A save is one transaction, sent in one round
    trip. A run is held with a session advisory lock on a connection of its own, which the
    server drops when the holding process dies; the held run's saves go through that
    connection, so a save never lands after its hold is lost.

    A connection the server dropped (a restart, a failover, an idle timeout) is opened again,
    and what was being done is done again, for up to `reconnect_seconds`: every operation is
    safe to repeat (a save writes the same state; a hold is taken again only if no one else
    took it meanwhile, else RunLockedError). Past that, checkpoints.StoreUnavailableError; a
    refusal no retry cures (a login, a schema, a full disk) raises StoreError at once. Neither
    message, nor the repr, shows the DSN's password.
    """

    def __init__(self, dsn: str, *, reconnect_seconds: float = 10.0) -> None:
        if not isinstance(reconnect_seconds, int | float) or not (
            0 <= reconnect_seconds < math.inf
        ):
            raise CheckpointConfigError(
                f"reconnect_seconds must be seconds >= 0, got {reconnect_seconds!r}"
            )
        psycopg = _psycopg()
        self.reconnect_seconds = float(reconnect_seconds)
        self._dsn = dsn
        self._options = _options(psycopg, dsn)
        self._name = _name(self._options)
        self._password = self._options.get("password")
        timed = "connect_timeout" in self._options or "PGCONNECT_TIMEOUT" in os.environ
        self._connect_options = {} if timed else {"connect_timeout": _CONNECT_TIMEOUT}
        self._lock = threading.Lock()
        self._connection: Any = None
        self._closed = False
        self._saved_steps: dict[str, int] = {}
        self._holds: dict[str, Any] = {}
        with self._lock:
            self._do("open the database", None, self._create_tables)

    def __repr__(self) -> str:
        return self._name  # never the DSN, which may hold a password

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for connection in (*self._holds.values(), self._connection):
                if connection is not None:
                    connection.close()
            self._holds.clear()

    def save(self, state: RunState) -> None:
        def save(connection: Any) -> None:
            start = self._saved_steps.get(state.run_id)
            if start is None:
                row = connection.execute(
                    "SELECT steps FROM chainkit_runs WHERE run_id = %s", (state.run_id,)
                ).fetchone()
                start = 0 if row is None else int(row[0])
            # One round trip: BEGIN, the rows and COMMIT go out together.
            with connection.pipeline(), connection.transaction():
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

        with self._lock:
            self._do(f"save run {state.run_id!r}", state.run_id, save)
            self._saved_steps[state.run_id] = len(state.steps)

    def load(self, run_id: str) -> RunState:
        def load(connection: Any) -> tuple[Any, list[Any]]:
            with connection.transaction():
                row = connection.execute(
                    "SELECT header, progress FROM chainkit_runs WHERE run_id = %s", (run_id,)
                ).fetchone()
                steps = connection.execute(
                    "SELECT step FROM chainkit_steps WHERE run_id = %s ORDER BY seq", (run_id,)
                ).fetchall()
            return row, steps

        with self._lock:
            row, steps = self._do(f"load run {run_id!r}", None, load)
        state = state_of(run_id, row, steps)
        self._saved_steps[run_id] = len(state.steps)
        return state

    def runs(self) -> list[RunSummary]:
        with self._lock:
            rows = self._do("list the runs", None, lambda c: c.execute(LIST_RUNS).fetchall())
        return [RunSummary(*row) for row in rows]

    def acquire(self, run_id: str) -> None:
        def found(connection: Any) -> bool:
            query = "SELECT 1 FROM chainkit_runs WHERE run_id = %s"
            return connection.execute(query, (run_id,)).fetchone() is not None

        with self._lock:
            if run_id in self._holds:
                raise RunLockedError(f"run {run_id!r} is held already, by this store")
            if not self._do(f"hold run {run_id!r}", None, found):
                raise RunNotFoundError(f"no run {run_id!r} in the checkpoint store")
            self._holds[run_id] = None  # its connection is opened, and the lock taken, below
            try:
                self._do(f"hold run {run_id!r}", run_id, lambda connection: None)
            except BaseException:
                self._drop(self._holds.pop(run_id, None))
                raise

    def release(self, run_id: str) -> None:
        with self._lock:
            holder = self._holds.pop(run_id, None)
        self._drop(holder)

    def _do(self, doing: str, run_id: str | None, work: Callable[[Any], T]) -> T:
        """`work(connection)` on the connection holding `run_id` (when this store holds it),
        else on the store's own; a connection lost is opened again and `work` repeated, for
        up to `reconnect_seconds`. Raises the store's errors, naming `doing`."""
        psycopg = _psycopg()
        if self._closed:
            raise StoreError(
                f"{self._name} could not {doing}: the store was closed: open a new one"
            )
        deadline = time.monotonic() + self.reconnect_seconds
        pause = 0.05
        while True:
            try:
                return work(self._connected(run_id))
            except psycopg.Error as error:
                lost = self._lost(error, run_id)
                if not lost or time.monotonic() + pause > deadline:
                    raise postgres_failure(self._name, doing, error, self._password, lost) from None
            except UnicodeEncodeError as error:
                raise bad_text(self._name, doing, error) from None
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def _connected(self, run_id: str | None) -> Any:
        """The open connection to do the work of `run_id` on: its holder's (opened again,
        and the run's lock taken on it again, after a loss), else the store's own."""
        if run_id is None or run_id not in self._holds:
            if self._connection is None or self._connection.closed:
                self._connection = self._connect()
            return self._connection
        holder = self._holds[run_id]
        if holder is not None and not holder.closed:
            return holder
        holder = self._holds[run_id] = self._connect()
        (taken,) = holder.execute(_LOCK, (run_id,)).fetchone()
        if not taken:
            self._drop(self._holds.pop(run_id))
            raise RunLockedError(
                f"run {run_id!r} is held by another process, which is running or resuming it"
            )
        return holder

    def _connect(self) -> Any:
        return _psycopg().connect(self._dsn, autocommit=True, **self._connect_options)

    def _lost(self, error: Exception, run_id: str | None) -> bool:
        """Whether `error` says the connection was lost (or never made, for a reason that
        may pass), so the work may be tried again on a new one."""
        connection = self._holds.get(run_id) if run_id in self._holds else self._connection
        if connection is None or connection.closed:
            message = str(error)
            return not ("FATAL:" in message and any(w in message for w, _ in LOGIN_REFUSALS))
        if getattr(error, "sqlstate", None) == READ_ONLY:  # the primary may be elsewhere now
            connection.close()
            return True
        return False

    def _create_tables(self, connection: Any) -> None:
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(hashtext('chainkit_schema'))")
            for statement in filter(str.strip, _SCHEMA.split(";")):
                connection.execute(statement)

    @staticmethod
    def _drop(connection: Any) -> None:
        if connection is not None:
            connection.close()


def _options(psycopg: Any, dsn: object) -> dict[str, Any]:
    """The DSN's settings; a DSN libpq cannot read is refused without quoting it."""
    if not isinstance(dsn, str):
        raise CheckpointConfigError(f"PostgresStore takes a DSN as a str, got {type(dsn).__name__}")
    try:
        return dict(psycopg.conninfo.conninfo_to_dict(dsn))
    except psycopg.Error:
        raise CheckpointConfigError(
            "PostgresStore's dsn is neither a libpq connection string (host=... dbname=...) nor "
            "a URL (postgresql://user:password@host:port/dbname) that libpq reads; it is not "
            "shown here, as it may hold a password"
        ) from None


def _name(options: dict[str, Any]) -> str:
    """The store as messages and its repr name it: user, hosts, ports and database."""
    where = options.get("host", "")
    if options.get("port"):
        where = f"{where}:{options['port']}"
    if options.get("user"):
        where = f"{options['user']}@{where}"
    return f"PostgresStore({where}/{options.get('dbname', '')})"
