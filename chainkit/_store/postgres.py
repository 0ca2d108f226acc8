"""A PostgreSQL database (psycopg 3, the `chainkit[postgres]` extra) as a Database, for stores
shared by many machines."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, TypeVar

from chainkit._errors import StoreConfigError
from chainkit._store.database import Cursor, Database
from chainkit._store.failures import (
    LOGIN_REFUSALS,
    READ_ONLY,
    Caller,
    bad_text,
    closed,
    postgres_failure,
)

T = TypeVar("T")

_CONNECT_TIMEOUT = 10
"""Seconds a connection attempt may take when the DSN sets no connect_timeout: libpq's
default is to wait for as long as TCP does, minutes for a host that vanished."""
_COLUMNS = (
    "SELECT column_name FROM information_schema.columns "
    "WHERE table_name = ? AND table_schema = current_schema()"
)


@lru_cache(maxsize=512)
def _placeholders(sql: str) -> str:
    """A statement with `?` placeholders as psycopg takes it (`%s`, and `%` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def psycopg_module() -> Any:
    """psycopg, or the error saying how to install it."""
    try:
        import psycopg
    except ImportError:
        raise StoreConfigError(
            "PostgreSQL needs psycopg 3: pip install 'chainkit[postgres]'"
        ) from None
    return psycopg


class PostgresDatabase(Database):
    """The PostgreSQL database at `dsn` (a libpq connection string or URL).

    A connection the server dropped (a restart, a failover, an idle timeout) is opened again
    and the work done again, for up to `reconnect_seconds`; past that, StoreUnavailableError.
    A refusal no retry cures (a login, a schema, a full disk) raises StoreError at once. No
    message, nor the repr, shows the DSN's password."""

    dialect = "postgresql"

    def __init__(self, dsn: str, *, reconnect_seconds: float = 10.0) -> None:
        super().__init__()
        psycopg = psycopg_module()
        options = _options(psycopg, dsn)
        self.where = _where(options)
        self.reconnect_seconds = float(reconnect_seconds)
        self._dsn = dsn
        self._password = options.get("password")
        timed = "connect_timeout" in options or "PGCONNECT_TIMEOUT" in os.environ
        self._connect_options = {} if timed else {"connect_timeout": _CONNECT_TIMEOUT}
        self._connection: Any = None
        self._closed = False
        self._pid = os.getpid()

    def run(
        self,
        doing: str,
        work: Callable[[Cursor], T],
        *,
        by: Caller | None = None,
        write: bool = True,
    ) -> T:
        caller = by or self.caller
        started = False  # a try reached the work: its COMMIT may have happened, reply lost

        def attempt() -> T:
            nonlocal started
            connection, retried = self._connected(), started
            with connection.transaction(), connection.cursor() as raw:
                started = True
                return work(Cursor(raw, _placeholders, retried))

        with self.lock:
            self._check_open(caller, doing)
            return self._retrying(caller, doing, attempt)

    @contextmanager
    def transaction(
        self, doing: str = "use the database", *, by: Caller | None = None, write: bool = True
    ) -> Iterator[Cursor]:
        psycopg = psycopg_module()
        caller = by or self.caller
        with self.lock:
            self._check_open(caller, doing)
            connection = self._retrying(caller, doing, self._connected)
            try:
                with connection.transaction(), connection.cursor() as raw:
                    yield Cursor(raw, _placeholders)
            except psycopg.Error as error:
                lost = self._lost(error)
                raise postgres_failure(caller, doing, error, self._password, lost) from None
            except UnicodeEncodeError as error:
                raise bad_text(caller, doing, error) from None

    def _retrying(self, caller: Caller, doing: str, attempt: Callable[[], T]) -> T:
        """`attempt()`, tried again on a new connection while the one it used was lost, for
        up to `reconnect_seconds`; raises the StoreError naming `caller` and `doing`."""
        psycopg = psycopg_module()
        deadline = time.monotonic() + self.reconnect_seconds
        pause = 0.05
        while True:
            try:
                return attempt()
            except psycopg.Error as error:
                lost = self._lost(error)
                if not lost or time.monotonic() + pause > deadline:
                    raise postgres_failure(caller, doing, error, self._password, lost) from None
            except UnicodeEncodeError as error:
                raise bad_text(caller, doing, error) from None
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def columns(self, cursor: Cursor, table: str) -> set[str]:
        return {name for (name,) in cursor.execute(_COLUMNS, (table,)).fetchall()}

    def close(self) -> None:
        with self.lock:
            self._closed = True
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()

    def lock_key(self, cursor: Cursor, key: str) -> None:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (key,))

    def _check_open(self, caller: Caller, doing: str) -> None:
        if self._closed:
            raise closed(caller, doing)
        if self._pid != os.getpid():
            # In a process forked from the one that opened the database: the parent's
            # connection is forgotten (never closed: that would end the parent's session
            # under it), and this process opens its own.
            self._pid = os.getpid()
            self._connection = None

    def _connected(self) -> Any:
        """The connection, opened again after a loss."""
        if self._connection is None or self._connection.closed:
            self._connection = psycopg_module().connect(
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


def _options(psycopg: Any, dsn: object) -> dict[str, Any]:
    """The DSN's settings; a DSN libpq cannot read is refused without quoting it."""
    if not isinstance(dsn, str):
        raise StoreConfigError(f"a PostgreSQL DSN is a str, got {type(dsn).__name__}")
    try:
        return dict(psycopg.conninfo.conninfo_to_dict(dsn))
    except psycopg.Error:
        raise StoreConfigError(
            "the DSN is neither a libpq connection string (host=... dbname=...) nor a URL "
            "(postgresql://user:password@host:port/dbname) that libpq reads; it is not shown "
            "here, as it may hold a password"
        ) from None


def _where(options: dict[str, Any]) -> str:
    """The database as messages and reprs name it: user, hosts, ports and database."""
    where = options.get("host", "")
    if options.get("port"):
        where = f"{where}:{options['port']}"
    if options.get("user"):
        where = f"{options['user']}@{where}"
    return f"{where}/{options.get('dbname', '')}"
