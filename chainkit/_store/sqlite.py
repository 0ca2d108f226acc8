"""A SQLite file (stdlib sqlite3, WAL) as a Database, for the threads and processes of one
machine."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from chainkit._store.database import Cursor, Database
from chainkit._store.failures import Caller, bad_text, sqlite_failure

T = TypeVar("T")


def _as_is(sql: str) -> str:
    return sql


class SQLiteDatabase(Database):
    """The SQLite database at `path` (made if missing; ":memory:" for one process's tests).
    WAL lets readers in while another connection writes. `synchronous` is SQLite's setting:
    "NORMAL" survives a process crash, "FULL" a power loss too, at the cost of a disk flush
    per commit. `timeout` is how long (seconds) a transaction waits while another connection
    holds the write lock. `read_only`: the file must exist, and is never written (a command
    that reads a store opens it so)."""

    dialect = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        timeout: float = 30.0,
        read_only: bool = False,
        by: Caller | None = None,
    ) -> None:
        super().__init__()
        self.path = os.fspath(path)
        self.where = repr(self.path)
        self.timeout = float(timeout)
        self.read_only = read_only
        target = f"{Path(self.path).absolute().as_uri()}?mode=ro" if read_only else self.path
        try:
            self._connection = sqlite3.connect(
                target,
                isolation_level=None,
                check_same_thread=False,
                timeout=self.timeout,
                uri=read_only,
            )
        except sqlite3.Error as error:
            raise self._failure(by, "open the database", error) from error
        if read_only:
            return
        try:
            _write_ahead_log(self._connection, self.timeout)
            self._connection.execute(f"PRAGMA synchronous={synchronous}")
        except sqlite3.Error as error:
            self._connection.close()
            raise self._failure(by, "open the database", error) from error

    def run(
        self,
        doing: str,
        work: Callable[[Cursor], T],
        *,
        by: Caller | None = None,
        write: bool = True,
    ) -> T:
        with self.transaction(doing, by=by, write=write) as cursor:
            return work(cursor)

    def transaction(
        self, doing: str = "use the database", *, by: Caller | None = None, write: bool = True
    ) -> _Transaction:
        begin = "BEGIN IMMEDIATE" if write and not self.read_only else "BEGIN"
        return _Transaction(self, doing, by, begin)

    def columns(self, cursor: Cursor, table: str) -> set[str]:
        return {row[1] for row in cursor.execute(f"PRAGMA table_info({table})").fetchall()}

    def lock_key(self, cursor: Cursor, key: str) -> None:
        """Nothing to do: a write transaction (BEGIN IMMEDIATE) holds the whole file."""

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    def _failure(self, by: Caller | None, doing: str, error: sqlite3.Error) -> Exception:
        return sqlite_failure(by or self._caller, doing, error, self.timeout)


class _Transaction:
    """One transaction under the database's lock, committed when the block ends, else rolled
    back (unless SQLite, on a full disk or an I/O error, rolled it back itself); a failure
    raised as the StoreError naming `by`. (A class: a generator's context manager costs a
    checkpoint's save measurably.)"""

    __slots__ = ("begin", "by", "database", "doing")

    def __init__(self, database: SQLiteDatabase, doing: str, by: Caller | None, begin: str):
        self.database = database
        self.doing = doing
        self.by = by
        self.begin = begin

    def __enter__(self) -> Cursor:
        self.database._lock.__enter__()
        try:
            connection = self.database._connection
            connection.execute(self.begin)
            return Cursor(connection.cursor(), _as_is)
        except BaseException as error:
            self._leave(error)
            raise

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        connection = self.database._connection
        try:
            try:
                if error is None:
                    connection.execute("COMMIT")
            finally:
                if connection.in_transaction:  # the block or its COMMIT failed
                    connection.execute("ROLLBACK")
        except BaseException as failed:
            self._leave(failed)
            raise
        self._leave(error)

    def _leave(self, error: BaseException | None) -> None:
        """Lets the lock go; raises `error` as the store's when the database raised it."""
        self.database._lock.__exit__()
        if isinstance(error, sqlite3.Error):
            raise self.database._failure(self.by, self.doing, error) from error
        if isinstance(error, UnicodeEncodeError):
            raise bad_text(self.by or self.database._caller, self.doing, error) from error


def _write_ahead_log(connection: sqlite3.Connection, timeout: float) -> None:
    """Puts the database in WAL mode. Another process opening the file at the same moment may
    hold it, and SQLite then answers "database is locked" at once, without waiting as a
    transaction would: wait up to `timeout` here instead."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)
