"""PostgresStore: runs' states in PostgreSQL (psycopg 3, the `chainkit[postgres]` extra), for
runs resumed on any machine."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from chainkit.checkpoints import _lease as leases
from chainkit.checkpoints import _rows as rows
from chainkit.checkpoints._failures import (
    LOGIN_REFUSALS,
    READ_ONLY,
    bad_text,
    postgres_failure,
)
from chainkit.checkpoints._store_lock import StoreLock
from chainkit.checkpoints.errors import (
    CheckpointConfigError,
    RunLockedError,
    StoreError,
    StoreUnavailableError,
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
_COLUMNS = (
    "SELECT column_name FROM information_schema.columns "
    "WHERE table_name = 'chainkit_runs' AND table_schema = current_schema()"
)
_SAVE_STEP = """
INSERT INTO chainkit_steps VALUES (%s, %s, %s)
ON CONFLICT (run_id, seq) DO UPDATE SET step = excluded.step
"""
_CONNECT_TIMEOUT = 10
"""Seconds a connection attempt may take when the DSN sets no connect_timeout: libpq's
default is to wait for as long as TCP does, minutes for a host that vanished."""


def _pg(sql: str) -> str:
    """The stores' shared SQL with psycopg's placeholders."""
    return sql.replace("?", "%s")


_SQL = rows.Dialect(
    _pg(rows.UPDATE_RUN.format(same="IS NOT DISTINCT FROM")),
    _pg(rows.READ_VERSION),
    _pg(rows.INSERT_RUN),
    _pg(rows.READ_RECORD),
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
    at once, one held on another machine once it expired.

    A connection the server dropped (a restart, a failover, an idle timeout) is opened again
    and what was being done is done again, for up to `reconnect_seconds`: every operation is
    safe to repeat (a save writes the same state again; a save the server committed but whose
    acknowledgement was lost with the connection is found stored as this save wrote it, and
    counts as done). Past `reconnect_seconds`, checkpoints.StoreUnavailableError; a refusal
    no retry cures (a login, a schema, a full disk) raises StoreError at once. No message, nor
    the repr, shows the DSN's password.
    """

    def __init__(
        self,
        dsn: str,
        *,
        lease_seconds: float = leases.DEFAULT_SECONDS,
        reconnect_seconds: float = 10.0,
    ) -> None:
        if not isinstance(reconnect_seconds, int | float) or not (
            0 <= reconnect_seconds < math.inf
        ):
            raise CheckpointConfigError(
                f"reconnect_seconds must be seconds >= 0, got {reconnect_seconds!r}"
            )
        psycopg = _psycopg()
        self._lease_seconds = leases.checked_seconds(lease_seconds)
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
        self._held: dict[str, str] = {}
        """This store's lease token on each run it holds."""
        self._unreleased: dict[str, str] = {}
        """Its token on each run it let go of while the server was out of reach: the lease
        stands until it expires, or this store takes the run again."""
        self._pid = os.getpid()
        with self._lock:
            self._do("open the database", self._create_tables)

    def __repr__(self) -> str:
        return self._name  # never the DSN, which may hold a password

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._connection is not None:
                self._connection.close()

    def save(self, state: RunState) -> None:
        retry = False  # a try of this save reached the server already: its COMMIT may have

        def save(connection: Any) -> None:
            nonlocal retry
            start = self._saved_steps.get(state.run_id)
            if start is None:
                row = connection.execute(
                    "SELECT steps FROM chainkit_runs WHERE run_id = %s", (state.run_id,)
                ).fetchone()
                start = 0 if row is None else int(row[0])
            with connection.transaction():
                now, held = time.time(), self._held.get(state.run_id)
                expires = now + self._lease_seconds
                tried, retry = retry, True
                rows.write_run(connection.execute, _SQL, state, now, expires, held, tried)
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

        with self._lock:
            state.saved += 1
            try:
                self._do(f"save run {state.run_id!r}", save)
            except BaseException:
                state.saved -= 1
                raise
            self._saved_steps[state.run_id] = len(state.steps)

    def load(self, run_id: str) -> RunState:
        def load(connection: Any) -> tuple[Any, list[Any]]:
            with connection.transaction():
                row = connection.execute(_LOAD_RUN, (run_id,)).fetchone()
                steps = connection.execute(
                    "SELECT step FROM chainkit_steps WHERE run_id = %s ORDER BY seq", (run_id,)
                ).fetchall()
            return row, steps

        with self._lock:
            row, steps = self._do(f"load run {run_id!r}", load)
        state = rows.state_of(run_id, row, steps)
        self._saved_steps[run_id] = len(state.steps)
        return state

    def runs(self) -> list[RunSummary]:
        with self._lock:
            listed = self._do("list the runs", lambda c: c.execute(rows.LIST_RUNS).fetchall())
        return [RunSummary(*row) for row in listed]

    def acquire(self, run_id: str) -> None:
        ours: str | None = None  # this store's token on the run, which a hold of it gives way to

        def take(connection: Any) -> str:
            nonlocal ours
            with connection.transaction():
                execute, seconds = connection.execute, self._lease_seconds
                ours = leases.take(execute, _READ_LEASE, _TAKE_LEASE, run_id, seconds, ours)
                return ours  # a retry after a lost reply to COMMIT finds this one: its own

        with self._lock:
            if run_id in self._held:
                raise RunLockedError(f"run {run_id!r} is held already, by this store")
            ours = self._unreleased.get(run_id)
            self._held[run_id] = self._do(f"hold run {run_id!r}", take)
            self._unreleased.pop(run_id, None)

    def release(self, run_id: str) -> None:
        self._lock.later(partial(self._release, run_id))

    def _release(self, run_id: str) -> None:
        self._after_fork()
        token = self._held.pop(run_id, None)
        if token is None or self._closed:
            return
        try:
            self._do(f"release run {run_id!r}", lambda c: c.execute(_END_LEASE, (run_id, token)))
        except StoreUnavailableError:  # what failed before it (a save) is what the caller hears
            self._unreleased[run_id] = token

    def _do(self, doing: str, work: Callable[[Any], T]) -> T:
        """`work(connection)`; a connection lost is opened again and `work` repeated, for up
        to `reconnect_seconds`. Raises the store's errors, naming `doing`."""
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
                return work(self._connected())
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
        connection (never closing it: that would end the parent's session under it) and its
        holds, which stay the parent's: the child opens a connection of its own."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._connection = None  # psycopg does not end a session from a forked child
            self._held.clear()
            self._unreleased.clear()

    def _connected(self) -> Any:
        """The store's connection, opened again after a loss."""
        if self._connection is None or self._connection.closed:
            self._connection = _psycopg().connect(
                self._dsn, autocommit=True, **self._connect_options
            )
        return self._connection

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
            # Added to an older chainkit's table only: ALTER TABLE locks out every run's save.
            present = {name for (name,) in connection.execute(_COLUMNS)}
            for statement in leases.added_columns(present):
                connection.execute(statement)


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
