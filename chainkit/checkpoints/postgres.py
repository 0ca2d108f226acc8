"""PostgresStore: runs' states in PostgreSQL (psycopg 3, the `chainkit[postgres]` extra), for
runs resumed on any machine."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from chainkit.checkpoints._failures import (
    LOGIN_REFUSALS,
    READ_ONLY,
    bad_text,
    postgres_failure,
)
from chainkit.checkpoints._rows import LIST_RUNS, run_row, state_of, step_rows
from chainkit.checkpoints._store_lock import StoreLock
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
_TAKE = (
    "SELECT pg_try_advisory_lock(hashtextextended(run_id, 0)) FROM chainkit_runs WHERE run_id = %s"
)
"""The run's lock taken, if the run is there: no row when it is not."""
_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"
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
    `dsn` (a libpq connection string or URL). A save is one transaction. A run is held with
    a session advisory lock on the store's connection, which the server drops when the
    holding process dies.

    A connection the server dropped (a restart, a failover, an idle timeout) is opened again,
    the runs it held are taken again, and what was being done is done again, for up to
    `reconnect_seconds`: every operation is safe to repeat (a save writes the same state
    again). A held run that another process took while the connection was down is not
    written to again: its saves raise RunLockedError. Past `reconnect_seconds`,
    checkpoints.StoreUnavailableError; a refusal no retry cures (a login, a schema, a full
    disk) raises StoreError at once. No message, nor the repr, shows the DSN's password.
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
        self._lock = StoreLock()
        self._connection: Any = None
        self._closed = False
        self._saved_steps: dict[str, int] = {}
        self._holds: set[str] = set()
        self._taken_over: set[str] = set()
        """Runs held here whose lock another process took while the connection was down."""
        self._pid = os.getpid()
        with self._lock:
            self._do("open the database", self._create_tables)

    def __repr__(self) -> str:
        return self._name  # never the DSN, which may hold a password

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._holds.clear()
            if self._connection is not None:
                self._connection.close()

    def save(self, state: RunState) -> None:
        def save(connection: Any) -> None:
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

        with self._lock:
            self._do(f"save run {state.run_id!r}", save, state.run_id)
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
            row, steps = self._do(f"load run {run_id!r}", load)
        state = state_of(run_id, row, steps)
        self._saved_steps[run_id] = len(state.steps)
        return state

    def runs(self) -> list[RunSummary]:
        with self._lock:
            rows = self._do("list the runs", lambda c: c.execute(LIST_RUNS).fetchall())
        return [RunSummary(*row) for row in rows]

    def acquire(self, run_id: str) -> None:
        def take(connection: Any) -> bool | None:
            row = connection.execute(_TAKE, (run_id,)).fetchone()
            return None if row is None else bool(row[0])

        with self._lock:
            if run_id in self._holds:
                raise RunLockedError(f"run {run_id!r} is held already, by this store")
            taken = self._do(f"hold run {run_id!r}", take)
            if taken is None:
                raise RunNotFoundError(f"no run {run_id!r} in the checkpoint store")
            if not taken:
                raise _held_elsewhere(run_id)
            self._holds.add(run_id)

    def release(self, run_id: str) -> None:
        self._lock.later(partial(self._release, run_id))

    def _release(self, run_id: str) -> None:
        self._after_fork()
        if run_id not in self._holds:
            return
        self._holds.discard(run_id)
        connection = self._connection
        if run_id in self._taken_over or connection is None or connection.closed:
            self._taken_over.discard(run_id)
            return  # its lock went with the connection that held it
        try:
            connection.execute(_UNLOCK, (run_id,))
        except _psycopg().Error:
            connection.close()  # with its locks; the runs still held are taken again

    def _do(self, doing: str, work: Callable[[Any], T], held: str | None = None) -> T:
        """`work(connection)`; a connection lost is opened again and `work` repeated, for up
        to `reconnect_seconds`. Raises the store's errors, naming `doing`; RunLockedError
        when run `held`, held here, was taken over by another process meanwhile."""
        psycopg = _psycopg()
        if self._closed:
            raise StoreError(
                f"{self._name} could not {doing}: the store was closed: open a new one"
            )
        self._after_fork()
        deadline = time.monotonic() + self.reconnect_seconds
        pause = 0.05
        while True:
            try:
                connection = self._connected()
                if held in self._taken_over:
                    raise _held_elsewhere(held)
                return work(connection)
            except psycopg.Error as error:
                lost = self._lost(error)
                if not lost or time.monotonic() + pause > deadline:
                    raise postgres_failure(self._name, doing, error, self._password, lost) from None
            except UnicodeEncodeError as error:
                raise bad_text(self._name, doing, error) from None
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def _after_fork(self) -> None:
        """In a process forked from the one that made the store, forgets the parent's
        connection (never closing it: that would end the parent's session, and with it the
        parent's holds) and its holds: the child opens a connection of its own."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._connection = None  # psycopg does not end a session from a forked child
            self._holds.clear()
            self._taken_over.clear()

    def _connected(self) -> Any:
        """The store's connection; after a loss, a new one holding again the runs held here
        that no other process took meanwhile."""
        if self._connection is not None and not self._connection.closed:
            return self._connection
        connection = _psycopg().connect(self._dsn, autocommit=True, **self._connect_options)
        try:
            for run_id in self._holds - self._taken_over:
                (taken,) = connection.execute(_LOCK, (run_id,)).fetchone()
                if not taken:
                    self._taken_over.add(run_id)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return connection

    def _lost(self, error: Exception) -> bool:
        """Whether `error` says the connection was lost (or never made, for a reason that
        may pass), so the work may be tried again on a new one."""
        connection = self._connection
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


def _held_elsewhere(run_id: str) -> RunLockedError:
    return RunLockedError(
        f"run {run_id!r} is held by another process, which is running or resuming it"
    )


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
