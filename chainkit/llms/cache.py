"""The response cache: its contract (`ResponseCache`), the in-memory cache, and the cache every
model uses unless it has its own (`set_cache`).

A model with a cache (`llms.OpenAI(..., cache=llms.InMemoryCache())`, or every model once
`llms.set_cache(cache)` is called) answers a call it has answered before from the cache: the
key is a hash of everything that changes the reply (`chainkit.llms._cache_key`). How a call
goes through the cache — events, streaming, one model call for concurrent identical calls —
is `chainkit.llms._cached_call`.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from chainkit._text import described
from chainkit.llms.errors import ModelConfigError, ModelTypeError
from chainkit.schema import Message

__all__ = ["CacheStats", "CachedReply", "InMemoryCache", "ResponseCache", "set_cache"]

DEFAULT_MAX_ENTRIES = 10_000


@dataclass(frozen=True, slots=True)
class CachedReply:
    """One reply as a cache keeps it: the `message`, and the `pieces` its text streamed in
    (None when it was not streamed), so that a streamed hit streams the same pieces."""

    message: Message
    pieces: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class CacheStats:
    """`entries` held now; `hits` and `misses`: the lookups this cache object answered with a
    reply, and without one, since it was made."""

    entries: int
    hits: int
    misses: int


@runtime_checkable
class ResponseCache(Protocol):
    """Model replies by key (a hex digest). `get` returns a reply the caller may change (a
    copy), or None; `put` keeps one; the `a`-methods are their async twins, which must not
    block the event loop. `cache_sampled` says whether replies sampled at a temperature above
    0 (or none given) are kept too; by default they are not."""

    cache_sampled: bool

    def get(self, key: str) -> CachedReply | None: ...

    def put(self, key: str, reply: CachedReply) -> None: ...

    async def aget(self, key: str) -> CachedReply | None: ...

    async def aput(self, key: str, reply: CachedReply) -> None: ...

    def clear(self) -> None: ...

    def stats(self) -> CacheStats: ...


class InMemoryCache:
    """Replies in this process: at most `max_entries` (the least recently used goes first),
    each for `ttl` seconds after it was put (None: until it is pushed out). Safe to share
    between threads and tasks. `clock` (seconds, monotonic) is for tests of the TTL."""

    def __init__(
        self,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        *,
        ttl: float | None = None,
        cache_sampled: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_entries = check_max_entries(max_entries)
        self.ttl = check_ttl(ttl)
        self.cache_sampled = check_flag("cache_sampled", cache_sampled)
        self._clock = clock
        # key -> (message as data, pieces, expiry): data, so a get builds a message its
        # caller owns and a put keeps none its caller may still change.
        self._entries: OrderedDict[str, tuple[dict[str, object], tuple[str, ...] | None, float]]
        self._entries = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def __repr__(self) -> str:
        return f"InMemoryCache(max_entries={self.max_entries}, ttl={self.ttl})"

    def __len__(self) -> int:
        return len(self._entries)

    def __reduce__(self) -> tuple[object, ...]:
        # Entries belong to this process: a copy (a model pickled into a worker) starts empty,
        # with the same settings, which costs at most a call per key there.
        return (_empty_copy, (self.max_entries, self.ttl, self.cache_sampled, self._clock))

    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[2] <= self._clock():
                del self._entries[key]
                entry = None
            if entry is None:
                self._misses += 1
                return None
            self._entries.move_to_end(key)
            self._hits += 1
        return CachedReply(Message.from_dict(entry[0]), entry[1])

    def put(self, key: str, reply: CachedReply) -> None:
        data = reply.message.to_dict()
        expiry = math.inf if self.ttl is None else self._clock() + self.ttl
        with self._lock:
            self._entries[key] = (data, reply.pieces, expiry)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    async def aget(self, key: str) -> CachedReply | None:
        return self.get(key)  # no I/O: answered in place

    async def aput(self, key: str, reply: CachedReply) -> None:
        self.put(key, reply)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(len(self._entries), self._hits, self._misses)


def _empty_copy(
    max_entries: int, ttl: float | None, cache_sampled: bool, clock: Callable[[], float]
) -> InMemoryCache:
    return InMemoryCache(max_entries, ttl=ttl, cache_sampled=cache_sampled, clock=clock)


def check_max_entries(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelTypeError(f"max_entries must be a whole number, got {described(value)}")
    if value < 1:
        raise ModelConfigError(f"max_entries must be 1 or more, got {value}")
    return value


def check_ttl(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelTypeError(f"ttl must be seconds (a number) or None, got {described(value)}")
    if not (math.isfinite(value) and value > 0):
        raise ModelConfigError(f"ttl must be a finite number of seconds above 0, got {value!r}")
    return float(value)


def check_flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ModelTypeError(f"{name} must be True or False, got {described(value)}")
    return value


_default: ResponseCache | None = None


def set_cache(cache: ResponseCache | None) -> None:
    """Makes `cache` the cache of every model that has none of its own (`cache=` of a model;
    `cache=False` keeps a model out of it); None turns the default cache off."""
    global _default
    _default = None if cache is None else checked_cache(cache, "set_cache")


def default_cache() -> ResponseCache | None:
    """The cache `set_cache` set; None when there is none."""
    return _default


def checked_cache(cache: object, where: str) -> ResponseCache:
    """`cache`, when it is a ResponseCache; ModelTypeError naming `where` otherwise."""
    if isinstance(cache, ResponseCache):
        return cache
    advice = (
        "give a cache (llms.InMemoryCache(), llms.SQLCache(path)), or call llms.set_cache(cache) "
        "once for every model"
        if cache is True
        else "a ResponseCache has get, put, aget, aput, clear, stats and cache_sampled"
    )
    raise ModelTypeError(f"{where} takes a ResponseCache, got {described(cache)}: {advice}")
