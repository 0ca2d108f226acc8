"""The `--db` of a command that reads a store (`chainkit runs`, `chainkit history`): a
PostgreSQL DSN, or a SQLite file that holds the store's table already, so that a mistyped
path is one error line and never becomes a new, empty database."""

from __future__ import annotations

import os
from pathlib import Path

from chainkit._errors import StoreConfigError
from chainkit._store import is_dsn
from chainkit._text import quoted


def check_existing(location: str, table: str, holding: str, writer: str) -> None:
    """Raises StoreConfigError, naming `location`, unless it is a DSN or a SQLite file with
    the table `table` (which holds `holding`, "chainkit's runs"; `writer` says what writes
    such a file, for the message)."""
    if is_dsn(location):
        return
    import sqlite3
    from contextlib import closing

    shown = quoted(location, 200)
    if not os.path.exists(location):
        raise StoreConfigError(
            f"no file {shown}: give --db the file {writer} wrote, or a postgresql:// URL"
        )
    if os.path.isdir(location):
        raise StoreConfigError(f"{shown} is a folder; --db takes a SQLite file")
    if not os.path.isfile(location):  # a pipe or a device: SQLite would wait on it, or read it
        raise StoreConfigError(f"{shown} is not a regular file; --db takes a SQLite file")
    read_only = f"{Path(location).absolute().as_uri()}?mode=ro"
    try:
        with closing(sqlite3.connect(read_only, uri=True)) as connection:
            found = connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
    except sqlite3.Error as error:
        raise StoreConfigError(
            f"{shown} is not a SQLite database, or is damaged: {error}"
        ) from None
    if found is None:
        raise StoreConfigError(f"{shown} is a SQLite database without {holding} (no {table} table)")
