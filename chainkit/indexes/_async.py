"""The async twins of an index's methods, written once for every index: the embedder's async
methods awaited when it has them (else its sync ones in a worker thread), and the index's own
work in a worker thread, so that the event loop never waits on a scan or a database."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Protocol

from chainkit._threads import in_thread
from chainkit.documents import Document
from chainkit.indexes._inputs import aembedded, aquery_vector, checked_documents, needed
from chainkit.indexes._keywords import checked_text
from chainkit.indexes.base import Filter, Hit
from chainkit.schema.embedder import Embedder


class _SyncIndex(Protocol):
    embedder: Embedder | None

    def upsert(
        self, documents: Iterable[Document], vectors: Sequence[Sequence[float]] | None = None
    ) -> None: ...

    def search(
        self, query: str | Sequence[float], *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]: ...

    def keyword_search(
        self, text: str, *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]: ...

    def mmr(
        self,
        query: str | Sequence[float],
        *,
        k: int = 4,
        fetch_k: int = 20,
        diversity: float = 0.5,
        where: Filter | None = None,
    ) -> list[Hit]: ...


class AsyncTwins:
    """`aupsert`, `asearch`, `akeyword_search` and `ammr` for an index that has `embedder`,
    `upsert`, `search`, `keyword_search` and `mmr`."""

    async def aupsert(
        self: _SyncIndex,
        documents: Iterable[Document],
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> None:
        """`upsert` for async code: the embedder's `aembed_documents` is awaited when it has
        one (else `embed_documents` runs in a worker thread), and the documents are kept in a
        worker thread."""
        batch = checked_documents(documents)
        if vectors is None and self.embedder is not None:
            vectors = await aembedded(self.embedder, batch)
        await in_thread(self.upsert, batch, vectors)

    async def asearch(
        self: _SyncIndex, query: str | Sequence[float], *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]:
        """`search` for async code: a text query embedded as `aupsert` embeds, the search in
        a worker thread."""
        vector = await _aquery_vector(self, query)
        return await in_thread(functools.partial(self.search, vector, k=k, where=where))

    async def akeyword_search(
        self: _SyncIndex, text: str, *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]:
        """`keyword_search` for async code, in a worker thread."""
        checked_text(text)
        found = functools.partial(self.keyword_search, text, k=k, where=where)
        return await in_thread(found)

    async def ammr(
        self: _SyncIndex,
        query: str | Sequence[float],
        *,
        k: int = 4,
        fetch_k: int = 20,
        diversity: float = 0.5,
        where: Filter | None = None,
    ) -> list[Hit]:
        """`mmr` for async code, as `asearch`."""
        vector = await _aquery_vector(self, query)
        chosen = functools.partial(
            self.mmr, vector, k=k, fetch_k=fetch_k, diversity=diversity, where=where
        )
        return await in_thread(chosen)


async def _aquery_vector(index: _SyncIndex, query: str | Sequence[float]) -> Sequence[float]:
    if not isinstance(query, str):
        return query
    embedder = needed(index.embedder, type(index).__name__, "search by text")
    return await aquery_vector(embedder, query)
