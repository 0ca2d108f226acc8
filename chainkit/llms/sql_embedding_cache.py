"""SQLEmbeddingCache: vectors kept in a SQLite file or a PostgreSQL database, on the one store
layer (`chainkit._store`), so that re-indexing after a restart, or on another machine, does not
embed unchanged texts again."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from typing import TypeVar

from chainkit._store import Caller, Cursor, Database, open_database
from chainkit.llms.cache import CacheStats
from chainkit.llms.embedding_cache import fresh_lists

__all__ = ["SQLEmbeddingCache"]

T = TypeVar("T")

COMPONENT, VERSION = "embedding_cache", 1
"""The name and schema version of the cache's table in the chainkit_schema table."""
TABLE = "chainkit_embedding_cache"
_CREATE = "CREATE TABLE IF NOT EXISTS chainkit_embedding_cache (key TEXT PRIMARY KEY, vector {})"
_TABLES = {
    "sqlite": [_CREATE.format("BLOB NOT NULL")],
    "postgresql": [_CREATE.format("BYTEA NOT NULL")],
}
_PUT = (
    "INSERT INTO chainkit_embedding_cache (key, vector) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET vector = excluded.vector"
)
_CLEAR = "DELETE FROM chainkit_embedding_cache"
_COUNT = "SELECT COUNT(*) FROM chainkit_embedding_cache"
_KEYS_PER_LOOKUP = 500
"""Keys asked for in one SELECT: under SQLite's oldest limit of 999 parameters."""
_MARKS = ", ".join(["?"] * _KEYS_PER_LOOKUP)
_GET = (
    "SELECT key, vector FROM chainkit_embedding_cache WHERE key IN ("  # noqa: S608 - "?" marks
    + _MARKS
    + ")"
)
"""One statement for every lookup (fewer keys are padded with a repeated key), so that the
database parses it once."""


def _packed(vector: Sequence[float]) -> bytes:
    """`vector` as little-endian 8-byte floats: the float each number was, read back exactly."""
    return struct.pack(f"<{len(vector)}d", *vector)


def _unpacked(blob: bytes | memoryview) -> list[float]:
    data = bytes(blob)
    return list(struct.unpack(f"<{len(data) // 8}d", data))


class SQLEmbeddingCache:
    """Vectors in the database `where`: a SQLite file's path (made if missing), a
    `postgresql://` DSN (needs the postgres extra), or a database already open (shared with
    other stores). Vectors stay until `clear()`: the texts of an index are what it keeps.
    Safe to share between threads and processes."""

    def __init__(self, where: str | os.PathLike[str] | Database) -> None:
        self._owned = not isinstance(where, Database)
        self._db = open_database(where)
        self._name = f"SQLEmbeddingCache({self._db.where})"
        self._caller = Caller(self._name, TABLE, "the cached vectors are intact")
        self._hits = 0
        self._misses = 0
        self._db.ensure_table(COMPONENT, VERSION, _TABLES, by=self._caller)

    def __repr__(self) -> str:
        return self._name  # the database's masked name: never a password

    def get_many(self, keys: Sequence[str]) -> list[list[float] | None]:
        wanted = list(dict.fromkeys(keys))

        def read(cursor: Cursor) -> dict[str, list[float]]:
            found: dict[str, list[float]] = {}
            for start in range(0, len(wanted), _KEYS_PER_LOOKUP):
                part = wanted[start : start + _KEYS_PER_LOOKUP]
                part += part[-1:] * (_KEYS_PER_LOOKUP - len(part))
                for key, blob in cursor.execute(_GET, part).fetchall():
                    found[key] = _unpacked(blob)
            return found

        with self._db.held():  # the counts too, as the lock is held anyway
            found = self._run("read vectors", read, write=False) if wanted else {}
            vectors = [found.get(key) for key in keys]
            hits = len(vectors) - vectors.count(None)
            self._hits += hits
            self._misses += len(vectors) - hits
        return fresh_lists(vectors)

    def put_many(self, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        rows = [(key, _packed(vector)) for key, vector in items]
        if rows:
            self._run("keep vectors", lambda cursor: cursor.executemany(_PUT, rows))

    def clear(self) -> None:
        self._run("clear the cache", lambda cursor: cursor.execute(_CLEAR))

    def stats(self) -> CacheStats:
        """The vectors held now; the hits and misses of this object's lookups (by key)."""
        count = self._run(
            "count the vectors", lambda cursor: cursor.execute(_COUNT).fetchone()[0], write=False
        )
        return CacheStats(int(count), self._hits, self._misses)

    def close(self) -> None:
        """Closes the database, when the cache opened it (not one it was given open)."""
        if self._owned:
            self._db.close()

    def _run(self, doing: str, work: Callable[[Cursor], T], *, write: bool = True) -> T:
        return self._db.run(doing, work, by=self._caller, write=write)
