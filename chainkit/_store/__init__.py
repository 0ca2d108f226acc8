"""The one store layer: opening a database from a path or DSN, transactions on `?`-placeholder
SQL whatever the dialect, a dropped PostgreSQL connection reconnected and the work retried,
failures raised as StoreError / StoreUnavailableError naming the store (never a password),
and each component's tables made once with a schema version recorded. Checkpoints, chat
histories and the response cache all keep their rows through it, so a deployment opens its
database once and hands it to every store.

sqlite3 and psycopg are imported when a database is opened, never with this package."""

from __future__ import annotations

import os
import re
from typing import Any

from chainkit._errors import StoreConfigError
from chainkit._store.database import Cursor, Database, Migrate, json_text
from chainkit._store.failures import Caller, closed
from chainkit._store.lock import StoreLock

__all__ = [
    "Caller",
    "Cursor",
    "Database",
    "Migrate",
    "StoreLock",
    "closed",
    "is_dsn",
    "json_text",
    "open_database",
    "open_postgres",
    "open_sqlite",
]

_DSN_SCHEMES = ("postgresql://", "postgres://")
_LIBPQ_KEYWORDS = re.compile(r"\s*(?:host|hostaddr|port|dbname|user|password|service)\s*=")
"""How a libpq connection string ("host=db1 dbname=app") starts; no file is named so."""


def is_dsn(where: object) -> bool:
    """Whether `where` names a PostgreSQL database: a postgresql:// or postgres:// URL, or a
    libpq connection string."""
    return isinstance(where, str) and (
        where.startswith(_DSN_SCHEMES) or _LIBPQ_KEYWORDS.match(where) is not None
    )


def open_database(where: str | os.PathLike[str] | Database, **options: Any) -> Database:
    """The database `where` names: a `postgresql://` (or `postgres://`) URL or a libpq
    connection string ("host=db1 dbname=app"), a SQLite file's path (made if missing), or a
    Database already open, returned as it is. `options` go to `open_sqlite` (`synchronous`,
    `timeout`) or `open_postgres` (`reconnect_seconds`)."""
    if isinstance(where, Database):
        return where
    if is_dsn(where):
        return open_postgres(str(where), **options)
    if isinstance(where, str | os.PathLike) and isinstance(os.fspath(where), str):
        return open_sqlite(where, **options)
    raise StoreConfigError(
        "a database is a SQLite file's path, a postgresql:// DSN or an open database, "
        f"not {type(where).__name__}"
    )


def open_sqlite(
    path: str | os.PathLike[str],
    *,
    synchronous: str = "NORMAL",
    timeout: float = 30.0,
    read_only: bool = False,
    by: Caller | None = None,
) -> Database:
    """The SQLite database at `path` (see SQLiteDatabase); failures to open name `by`."""
    if not os.fspath(path):
        raise StoreConfigError("a SQLite database's path is empty: give the file's path")
    from chainkit._store.sqlite import SQLiteDatabase

    return SQLiteDatabase(
        path, synchronous=synchronous, timeout=timeout, read_only=read_only, by=by
    )


def open_postgres(dsn: str, *, reconnect_seconds: float = 10.0) -> Database:
    """The PostgreSQL database at `dsn` (see PostgresDatabase), connected when first used."""
    from chainkit._store.postgres import PostgresDatabase

    return PostgresDatabase(dsn, reconnect_seconds=reconnect_seconds)
