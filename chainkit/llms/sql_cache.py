"""SQLCache: model replies kept in a SQLite file or a PostgreSQL database, on the one store
layer (`chainkit._store`), so that they outlive the process and (PostgreSQL) are shared by
many machines."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from chainkit._store import Caller, Cursor, Database, json_text, open_database
from chainkit._threads import in_thread
from chainkit.llms.cache import (
    DEFAULT_MAX_ENTRIES,
    CachedReply,
    CacheStats,
    check_flag,
    check_max_entries,
    check_ttl,
)
from chainkit.llms.errors import ModelTypeError
from chainkit.schema import Message

__all__ = ["SQLCache", "StoredStats"]

T = TypeVar("T")

COMPONENT, VERSION = "llm_cache", 1
"""The name and schema version of the cache's table in the chainkit_schema table."""
TABLE = "chainkit_llm_cache"
_COLUMNS = (
    "key TEXT PRIMARY KEY, reply TEXT NOT NULL, created {real} NOT NULL, "
    "last_used {real} NOT NULL, hits INTEGER NOT NULL"
)
_CREATE = "CREATE TABLE IF NOT EXISTS chainkit_llm_cache ({columns})"
_INDEX = "CREATE INDEX IF NOT EXISTS chainkit_llm_cache_last_used ON chainkit_llm_cache (last_used)"
_TABLES = {
    "sqlite": [_CREATE.format(columns=_COLUMNS.format(real="REAL")), _INDEX],
    "postgresql": [_CREATE.format(columns=_COLUMNS.format(real="DOUBLE PRECISION")), _INDEX],
}
_GET = "SELECT reply, created FROM chainkit_llm_cache WHERE key = ?"
_USED = "UPDATE chainkit_llm_cache SET last_used = ?, hits = hits + 1 WHERE key = ?"
_DELETE = "DELETE FROM chainkit_llm_cache WHERE key = ?"
_PUT = (
    "INSERT INTO chainkit_llm_cache (key, reply, created, last_used, hits) "
    "VALUES (?, ?, ?, ?, 0) ON CONFLICT (key) DO UPDATE SET reply = excluded.reply, "
    "created = excluded.created, last_used = excluded.last_used"
)
_EXPIRED = "DELETE FROM chainkit_llm_cache WHERE created <= ?"
# The rows past the newest `max_entries` by last use; SQLite needs a LIMIT before OFFSET.
_EVICT = {
    "sqlite": "DELETE FROM chainkit_llm_cache WHERE key IN (SELECT key FROM "
    "chainkit_llm_cache ORDER BY last_used DESC LIMIT -1 OFFSET ?)",
    "postgresql": "DELETE FROM chainkit_llm_cache WHERE key IN (SELECT key FROM "
    "chainkit_llm_cache ORDER BY last_used DESC OFFSET ?)",
}
_CLEAR = "DELETE FROM chainkit_llm_cache"
_COUNT = "SELECT COUNT(*) FROM chainkit_llm_cache"
_STATS = (
    "SELECT COUNT(*), COALESCE(SUM(hits), 0), COALESCE(SUM(LENGTH(reply)), 0), "
    "MIN(created), MAX(last_used) FROM chainkit_llm_cache"
)


@dataclass(frozen=True, slots=True)
class StoredStats:
    """What a SQLCache's table holds: `entries`, the `hits` they have had (from every process),
    the `characters` of their replies, when the oldest was put (`oldest`) and the last was
    used (`last_used`), in seconds since the epoch (None when empty)."""

    entries: int
    hits: int
    characters: int
    oldest: float | None
    last_used: float | None


class SQLCache:
    """Replies in the database `where`: a SQLite file's path (made if missing; the default
    for one machine), a `postgresql://` DSN (for many machines; needs the postgres extra), or
    a database already open. At most `max_entries` (the least recently used go first), each
    for `ttl` seconds after it was put (None: until pushed out); `clock` gives the time in
    seconds since the epoch (for tests). Safe to share between threads and processes; its
    async methods do their database work in a worker thread."""

    def __init__(
        self,
        where: str | os.PathLike[str] | Database,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        ttl: float | None = None,
        cache_sampled: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_entries = check_max_entries(max_entries)
        self.ttl = check_ttl(ttl)
        self.cache_sampled = check_flag("cache_sampled", cache_sampled)
        self._clock = clock
        self._where = where
        self._owned = not isinstance(where, Database)
        self._db = open_database(where)
        self._name = f"SQLCache({self._db.where})"
        self._caller = Caller(self._name, TABLE, "the cache's entries are intact")
        self._hits = 0
        self._misses = 0
        self._db.ensure_table(COMPONENT, VERSION, _TABLES, by=self._caller)

    def __repr__(self) -> str:
        return self._name  # the database's masked name: never a password

    def __reduce__(self) -> tuple[object, ...]:
        # A copy (a model pickled into a worker) opens the same database by its path or DSN.
        if isinstance(self._where, Database):
            raise ModelTypeError(
                f"{self._name} was given an open database, which cannot be pickled: give "
                "SQLCache the database's path or DSN to send it to another process"
            )
        settings = (self.max_entries, self.ttl, self.cache_sampled, self._clock)
        return (_reopened, (self._where, *settings))

    def get(self, key: str) -> CachedReply | None:
        now = self._clock()

        def get(cursor: Cursor) -> tuple[str, float] | None:
            row = cursor.execute(_GET, (key,)).fetchone()
            if row is None:
                return None
            if self.ttl is not None and row[1] + self.ttl <= now:
                cursor.execute(_DELETE, (key,))
                return None
            cursor.execute(_USED, (now, key))
            return row[0], row[1]

        with self._db.held():  # the counts too, as the lock is held anyway
            found = self._run("read a reply", get)
            if found is None:
                self._misses += 1
                return None
            self._hits += 1
        return _reply_of(json.loads(found[0]))

    def put(self, key: str, reply: CachedReply) -> None:
        now = self._clock()
        text = json_text(_data_of(reply))

        def put(cursor: Cursor) -> None:
            cursor.execute(_PUT, (key, text, now, now))
            if self.ttl is not None:
                cursor.execute(_EXPIRED, (now - self.ttl,))
            cursor.execute(_EVICT[self._db.dialect], (self.max_entries,))

        self._run("keep a reply", put)

    async def aget(self, key: str) -> CachedReply | None:
        return await in_thread(self.get, key)

    async def aput(self, key: str, reply: CachedReply) -> None:
        await in_thread(self.put, key, reply)

    def clear(self) -> None:
        self._run("clear the cache", lambda cursor: cursor.execute(_CLEAR))

    def stats(self) -> CacheStats:
        """The entries held now; the hits and misses of this object's lookups."""
        count = self._run(
            "count the entries",
            lambda cursor: cursor.execute(_COUNT).fetchone()[0],
            write=False,
        )
        return CacheStats(int(count), self._hits, self._misses)

    def stored(self) -> StoredStats:
        """What the table holds, from every process that uses it."""
        row = self._run(
            "read the cache's figures", lambda c: c.execute(_STATS).fetchone(), write=False
        )
        return StoredStats(int(row[0]), int(row[1]), int(row[2]), row[3], row[4])

    def close(self) -> None:
        """Closes the database, when the cache opened it (not one it was given open)."""
        if self._owned:
            self._db.close()

    def _run(self, doing: str, work: Callable[[Cursor], T], *, write: bool = True) -> T:
        return self._db.run(doing, work, by=self._caller, write=write)


def _reopened(
    where: str | os.PathLike[str],
    max_entries: int,
    ttl: float | None,
    cache_sampled: bool,
    clock: Callable[[], float],
) -> SQLCache:
    return SQLCache(
        where, max_entries=max_entries, ttl=ttl, cache_sampled=cache_sampled, clock=clock
    )


def _data_of(reply: CachedReply) -> dict[str, Any]:
    """`reply` as JSON data; its pieces as their lengths, which cut its text back into them."""
    data: dict[str, Any] = {"message": reply.message.to_dict()}
    if reply.pieces is not None:
        data["pieces"] = [len(piece) for piece in reply.pieces]
    return data


def _reply_of(data: dict[str, Any]) -> CachedReply:
    message = Message.from_dict(data["message"])
    lengths = data.get("pieces")
    if lengths is None:
        return CachedReply(message)
    pieces, start = [], 0
    for length in lengths:
        pieces.append(message.content[start : start + length])
        start += length
    return CachedReply(message, tuple(pieces))
