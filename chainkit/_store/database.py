"""A database as every store uses it, whatever its dialect: work done in one transaction on
`?`-placeholder statements, tables made once with their schema version recorded, failures
raised as StoreError naming the store."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, TypeVar

from chainkit._errors import StoreError
from chainkit._store.failures import Caller
from chainkit._store.lock import StoreLock

T = TypeVar("T")

SCHEMA_TABLE = "chainkit_schema"
"""The table of each component's schema version."""
_CREATE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS chainkit_schema (name TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)
_READ_VERSION = "SELECT version FROM chainkit_schema WHERE name = ?"
_WRITE_VERSION = (
    "INSERT INTO chainkit_schema (name, version) VALUES (?, ?) "
    "ON CONFLICT (name) DO UPDATE SET version = excluded.version"
)

Migrate = Callable[["Cursor", "int | None"], None]
"""Brings a component's tables from the version recorded (None: made before versions were
recorded, or just now) to the code's, inside the transaction that made them."""


class Cursor:
    """What a transaction's work runs its statements on: `?` placeholders on every dialect.
    `retried`: an earlier try of this work reached the server and its COMMIT may have
    happened with the reply lost, so the work should first look for what it wrote."""

    __slots__ = ("_raw", "_sql", "retried")

    def __init__(self, raw: Any, sql: Callable[[str], str], retried: bool = False) -> None:
        self._raw = raw
        self._sql = sql
        self.retried = retried

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        self._raw.execute(self._sql(sql), params)
        return self

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if rows:  # psycopg refuses an empty batch
            self._raw.executemany(self._sql(sql), rows)

    def fetchone(self) -> Any:
        return self._raw.fetchone()

    def fetchall(self) -> list[Any]:
        return list(self._raw.fetchall())

    @property
    def rowcount(self) -> int:
        return int(self._raw.rowcount)


class Database(ABC):
    """One database (a SQLite file, a PostgreSQL server's database) that any number of stores
    share: open it once (`chainkit._store.open_database`) and hand it to each.

    Its one connection is used by one thread at a time (`lock`, which a store may hold over
    several calls to keep its own bookkeeping in step). `run(doing, work)` is the unit of
    work: `work(cursor)` inside one transaction, committed when it returns, rolled back when
    it raises; on PostgreSQL a connection lost is opened again and `work` run again (so it
    must be safe to repeat; `cursor.retried` says when a try may have committed).
    `transaction(doing)` is the same as a `with` block, never repeated."""

    dialect: ClassVar[str]
    """"sqlite" or "postgresql": the key of `ensure_table`'s statements."""
    where: str
    """The database as messages show it: a quoted path, or user@host:port/dbname (never a
    password)."""
    lock: StoreLock

    def __init__(self) -> None:
        self.lock = StoreLock()
        self._versions: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.where})"

    @property
    def caller(self) -> Caller:
        """The database naming itself, for work no store named."""
        return Caller(repr(self))

    @abstractmethod
    def run(
        self,
        doing: str,
        work: Callable[[Cursor], T],
        *,
        by: Caller | None = None,
        write: bool = True,
    ) -> T:
        """`work(cursor)` in one transaction (`write`: one that takes the write lock at once,
        where the dialect has such a thing); raises StoreError naming `by` and `doing` (a verb
        phrase: "save run 'r1'")."""

    @abstractmethod
    def transaction(
        self, doing: str = "use the database", *, by: Caller | None = None, write: bool = True
    ) -> AbstractContextManager[Cursor]:
        """A `with` block run as one transaction, on the cursor it gives."""

    @abstractmethod
    def columns(self, cursor: Cursor, table: str) -> set[str]:
        """The names of `table`'s columns (none when it does not exist)."""

    @abstractmethod
    def close(self) -> None:
        """Closes the connection; any later use raises StoreError."""

    def ensure_table(
        self,
        name: str,
        version: int,
        create: Mapping[str, Sequence[str]],
        migrate: Migrate | None = None,
        *,
        by: Caller | None = None,
    ) -> None:
        """Makes component `name`'s tables (`create[dialect]`: CREATE ... IF NOT EXISTS
        statements) once per database object, brings older ones up to `version` (`migrate`)
        and records the version in the chainkit_schema table. Tables at a newer version
        than `version` raise StoreError naming both: a newer chainkit wrote them."""
        if self._versions.get(name) == version:
            return
        caller = by or self.caller

        def ensure(cursor: Cursor) -> None:
            self.lock_key(cursor, SCHEMA_TABLE)
            cursor.execute(_CREATE_SCHEMA)
            row = cursor.execute(_READ_VERSION, (name,)).fetchone()
            recorded = None if row is None else row[0]
            if isinstance(recorded, int) and recorded > version:
                raise StoreError(
                    f"{caller.name} could not open the database: its {name!r} tables are at "
                    f"schema version {recorded}, newer than version {version}, the one this "
                    "chainkit knows: upgrade chainkit, or give the store a database of its own"
                )
            for statement in create[self.dialect]:
                cursor.execute(statement)
            if recorded != version:
                if migrate is not None:
                    migrate(cursor, recorded)
                cursor.execute(_WRITE_VERSION, (name, version))

        self.run("open the database", ensure, by=by)
        self._versions[name] = version

    @abstractmethod
    def lock_key(self, cursor: Cursor, key: str) -> None:
        """Makes every other transaction that locks `key` wait until this one ends (on
        SQLite, whose write transaction holds the whole file, it does nothing)."""


def json_text(value: object) -> str:
    """`value` as compact JSON text for a row, non-ASCII kept as it is; text holding a lone
    surrogate (read with "surrogateescape"), which no database stores, is escaped, so that it
    still reads back as it was."""
    text = _COMPACT.encode(value)
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"))
    return text


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""Made once: json.dumps makes an encoder per call when given any option."""
