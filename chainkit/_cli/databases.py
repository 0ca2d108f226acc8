"""The `--db` of a command that reads a store (`chainkit runs`, `chainkit history`): a
PostgreSQL DSN, or a SQLite file that holds the store's table already, so that a mistyped
path is one error line and never becomes a new, empty database."""

from __future__ import annotations

import os

from chainkit._errors import StoreConfigError
from chainkit._store import Caller, is_dsn, open_sqlite
from chainkit._text import quoted

_TABLE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"


def check_existing(location: str, table: str, holding: str, writer: str) -> None:
    """Raises StoreConfigError (StoreError for a file SQLite cannot read), naming `location`,
    unless it is a DSN or a SQLite file with the table `table` (which holds `holding`,
    "chainkit's runs"; `writer` says what writes such a file, for the message)."""
    if is_dsn(location):
        return
    shown = quoted(location, 200)
    if not os.path.exists(location):
        raise StoreConfigError(
            f"no file {shown}: give --db the file {writer} wrote, or a postgresql:// URL"
        )
    if os.path.isdir(location):
        raise StoreConfigError(f"{shown} is a folder; --db takes a SQLite file")
    if not os.path.isfile(location):  # a pipe or a device: SQLite would wait on it, or read it
        raise StoreConfigError(f"{shown} is not a regular file; --db takes a SQLite file")
    caller = Caller(shown)
    database = open_sqlite(location, read_only=True, by=caller)
    try:
        found = database.run(
            "be read", lambda cursor: cursor.execute(_TABLE, (table,)).fetchone(), by=caller
        )
    finally:
        database.close()
    if found is None:
        raise StoreConfigError(f"{shown} is a SQLite database without {holding} (no {table} table)")
