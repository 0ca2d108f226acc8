"""The embeddings cache: its contract (`EmbeddingCache`), the key of one text's vector, and the
in-memory cache. `CachedEmbeddings` (`chainkit.llms.cached_embeddings`) wraps an embedder with
one, so that embedding a text again (re-indexing unchanged chunks) costs a lookup, not a model
call; `SQLEmbeddingCache` keeps the vectors in a database."""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from typing import Literal, Protocol, TypeVar, runtime_checkable

from chainkit.llms.cache import CacheStats, check_max_entries

__all__ = [
    "DEFAULT_MAX_VECTORS",
    "EmbeddingCache",
    "InMemoryEmbeddingCache",
    "fresh_lists",
    "vector_key",
]

DEFAULT_MAX_VECTORS = 50_000
"""How many vectors an in-memory cache holds by default: about 600 MB of 1,536 dimensions
(kept as 8-byte floats), 150 MB of 384."""

TextKind = Literal["document", "query"]
"""How a text is embedded: some models (E5, BGE) embed a query otherwise than a passage."""


def vector_key(namespace: str, kind: TextKind, text: str) -> str:
    """The cache key of `text`'s vector from the embedder `namespace` names, embedded as
    `kind`: a SHA-256 hex digest, so that keys have one size whatever the text. The namespace
    is written with its length, so that no namespace and text run into another pair's."""
    head = f"{len(namespace)}:{namespace}|{kind}|".encode()
    # surrogatepass: a lone surrogate (text read with "surrogateescape") still has a key.
    return hashlib.sha256(head + text.encode("utf-8", "surrogatepass")).hexdigest()


Vectors = TypeVar("Vectors", list[list[float]], list[list[float] | None])


def fresh_lists(vectors: Vectors) -> Vectors:
    """`vectors`, each list that appears twice or more copied at its later places, so that a
    caller changing one changes no other."""
    seen: set[int] = set()
    out = vectors.copy()
    for position, vector in enumerate(vectors):
        if vector is not None and id(vector) in seen:
            out[position] = list(vector)
        elif vector is not None:
            seen.add(id(vector))
    return out


@runtime_checkable
class EmbeddingCache(Protocol):
    """Vectors by key (`vector_key`). `get_many` returns, for each key, its vector (a list the
    caller may change) or None; `put_many` keeps (key, vector) pairs. Safe to share between
    threads."""

    def get_many(self, keys: Sequence[str]) -> list[list[float] | None]: ...

    def put_many(self, items: Sequence[tuple[str, Sequence[float]]]) -> None: ...

    def clear(self) -> None: ...

    def stats(self) -> CacheStats: ...


class InMemoryEmbeddingCache:
    """Vectors in this process: at most `max_entries` (the least recently used goes first).
    Safe to share between threads."""

    def __init__(self, max_entries: int = DEFAULT_MAX_VECTORS) -> None:
        self.max_entries = check_max_entries(max_entries)
        self._vectors: OrderedDict[str, array[float]] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def __repr__(self) -> str:
        return f"InMemoryEmbeddingCache({len(self._vectors)} of {self.max_entries})"

    def get_many(self, keys: Sequence[str]) -> list[list[float] | None]:
        found: list[list[float] | None] = []
        with self._lock:
            for key in keys:
                vector = self._vectors.get(key)
                if vector is None:
                    found.append(None)
                    continue
                self._vectors.move_to_end(key)
                found.append(list(vector))
            hits = len(found) - found.count(None)
            self._hits += hits
            self._misses += len(found) - hits
        return found

    def put_many(self, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        with self._lock:
            for key, vector in items:
                self._vectors[key] = array("d", vector)
                self._vectors.move_to_end(key)
            while len(self._vectors) > self.max_entries:
                self._vectors.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(len(self._vectors), self._hits, self._misses)
