"""The methods every index writes the same way, over the few it writes its own way: `search`
and `mmr` over its `_nearest` (the documents nearest a unit vector), and the async twins: the
embedder's async methods awaited when it has them (else its sync ones in a worker thread), and
the index's own work in a worker thread, so that the event loop never waits on a scan or a
database."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence

from chainkit._threads import in_thread
from chainkit.documents import Document
from chainkit.indexes._inputs import (
    aembedded,
    aquery_vector,
    checked_documents,
    needed,
    unit_vector,
)
from chainkit.indexes._keywords import checked_text
from chainkit.indexes._selection import (
    checked_count,
    checked_diversity,
    checked_filter,
    most_relevant_and_diverse,
)
from chainkit.indexes.base import Filter, Hit
from chainkit.schema.embedder import Embedder


class IndexMethods(ABC):
    """`search`, `mmr` and the async twins of an index that has an `embedder`, `upsert`,
    `keyword_search` and `_nearest`."""

    embedder: Embedder | None

    @abstractmethod
    def upsert(
        self, documents: Iterable[Document], vectors: Sequence[Sequence[float]] | None = None
    ) -> None:
        """Keeps `documents` (see `VectorIndex`)."""

    @abstractmethod
    def keyword_search(self, text: str, *, k: int = 4, where: Filter | None = None) -> list[Hit]:
        """Finds documents by their terms (see `VectorIndex`)."""

    @abstractmethod
    def _nearest(
        self, unit: list[float], where: Filter, depth: int
    ) -> list[tuple[float, Document, list[float]]]:
        """The `depth` documents matching `where` most similar to `unit` (a query scaled to
        length 1), each with its similarity and its unit vector, most similar first (ties in
        the order they were added)."""

    def search(
        self, query: str | Sequence[float], *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]:
        k = checked_count("k", k)
        wanted = checked_filter(where)
        scored = self._nearest(self._query_unit(query), wanted, k)
        return [Hit(document, score) for score, document, _ in scored]

    def mmr(
        self,
        query: str | Sequence[float],
        *,
        k: int = 4,
        fetch_k: int = 20,
        diversity: float = 0.5,
        where: Filter | None = None,
    ) -> list[Hit]:
        k = checked_count("k", k)
        fetch_k = max(k, checked_count("fetch_k", fetch_k))
        diversity = checked_diversity(diversity)
        wanted = checked_filter(where)
        scored = self._nearest(self._query_unit(query), wanted, fetch_k)
        order = most_relevant_and_diverse([(s, unit) for s, _, unit in scored], k, diversity)
        return [Hit(scored[i][1], scored[i][0]) for i in order]

    async def aupsert(
        self,
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
        self, query: str | Sequence[float], *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]:
        """`search` for async code: a text query embedded as `aupsert` embeds, the search in
        a worker thread."""
        vector = await self._aquery_vector(query)
        return await in_thread(functools.partial(self.search, vector, k=k, where=where))

    async def akeyword_search(
        self, text: str, *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]:
        """`keyword_search` for async code, in a worker thread."""
        checked_text(text)
        found = functools.partial(self.keyword_search, text, k=k, where=where)
        return await in_thread(found)

    async def ammr(
        self,
        query: str | Sequence[float],
        *,
        k: int = 4,
        fetch_k: int = 20,
        diversity: float = 0.5,
        where: Filter | None = None,
    ) -> list[Hit]:
        """`mmr` for async code, as `asearch`."""
        vector = await self._aquery_vector(query)
        chosen = functools.partial(
            self.mmr, vector, k=k, fetch_k=fetch_k, diversity=diversity, where=where
        )
        return await in_thread(chosen)

    def _embedded(
        self, batch: list[Document], vectors: Sequence[Sequence[float]] | None
    ) -> Sequence[Sequence[float]] | None:
        """`vectors`, or, when None, the embedder's for `batch` (None with no embedder)."""
        if vectors is None and self.embedder is not None:
            return self.embedder.embed_documents([document.text for document in batch])
        return vectors

    def _query_unit(self, query: str | Sequence[float]) -> list[float]:
        if isinstance(query, str):
            query = self._embedder("search by text").embed_query(query)
        return unit_vector(query)

    async def _aquery_vector(self, query: str | Sequence[float]) -> Sequence[float]:
        if not isinstance(query, str):
            return query
        return await aquery_vector(self._embedder("search by text"), query)

    def _embedder(self, doing: str) -> Embedder:
        return needed(self.embedder, type(self).__name__, doing)
