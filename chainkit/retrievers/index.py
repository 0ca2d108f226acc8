"""The retrievers that search one index (`indexes.VectorIndex`): by its terms (`Lexical`,
BM25), by its meaning (`Dense`, cosine similarity), or by meaning spread out (`MMR`, maximal
marginal relevance). Each finds at most `k` documents among those whose metadata match
`where`, and leaves out any scoring below `min_score` (a BM25 score for `Lexical`, a cosine
similarity for the others)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chainkit.documents import Document
from chainkit.indexes import Hit, InMemoryIndex, VectorIndex
from chainkit.retrievers._settings import (
    checked_count,
    checked_index,
    checked_number,
    checked_where,
)
from chainkit.retrievers.base import Retriever
from chainkit.retrievers.errors import RetrieverConfigError

__all__ = ["MMR", "Dense", "Lexical"]


class _IndexRetriever(Retriever):
    """What the retrievers of one index share: the index, `k`, `where` and `min_score`."""

    _methods: tuple[str, str] = ("search", "asearch")

    def __init__(
        self,
        index: VectorIndex,
        *,
        k: int = 4,
        where: Mapping[str, Any] | None = None,
        min_score: float | None = None,
    ) -> None:
        self.index: VectorIndex = checked_index(index, self.name, *self._methods)
        self.k = checked_count("k", k)
        self.where = checked_where(where)
        self.min_score = None if min_score is None else checked_number("min_score", min_score)

    def __repr__(self) -> str:
        shown = [f"{self.index!r}", f"k={self.k}"]
        shown += [f"where={dict(self.where)!r}"] if self.where is not None else []
        shown += [f"min_score={self.min_score}"] if self.min_score is not None else []
        return f"{self.name}({', '.join(shown)})"

    def _kept(self, hits: list[Hit]) -> list[Hit]:
        least = self.min_score
        return hits if least is None else [hit for hit in hits if hit.score >= least]


class Lexical(_IndexRetriever):
    """The documents of `index` whose terms best match the query's, by BM25 (chainkit's one
    lexical engine, the tool retriever's: words, numbers, and Chinese, Japanese and Thai
    terms); those sharing no term with the query are never found. Needs no embedder.
    `Lexical.from_documents(documents)` searches documents given as they are."""

    _methods = ("keyword_search", "akeyword_search")

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        *,
        k: int = 4,
        where: Mapping[str, Any] | None = None,
        min_score: float | None = None,
    ) -> Lexical:
        """A lexical retriever over `documents`, kept in an `InMemoryIndex` of their terms
        alone (nothing embedded)."""
        index = InMemoryIndex()
        index.upsert(documents)
        return cls(index, k=k, where=where, min_score=min_score)

    def _search(self, query: str) -> list[Hit]:
        return self._kept(self.index.keyword_search(query, k=self.k, where=self.where))

    async def _asearch(self, query: str) -> list[Hit]:
        return self._kept(await self.index.akeyword_search(query, k=self.k, where=self.where))


class Dense(_IndexRetriever):
    """The documents of `index` most similar in meaning to the query: the query embedded by
    the index's embedder, compared by cosine similarity with each document's vector."""

    def _search(self, query: str) -> list[Hit]:
        return self._kept(self.index.search(query, k=self.k, where=self.where))

    async def _asearch(self, query: str) -> list[Hit]:
        return self._kept(await self.index.asearch(query, k=self.k, where=self.where))


class MMR(_IndexRetriever):
    """`k` documents of `index` similar in meaning to the query and unlike each other, by
    maximal marginal relevance: among the `fetch_k` most similar, each chosen for its
    similarity to the query less, weighted by `diversity` (0: none, like `Dense`; 1: only
    unlikeness), its similarity to those chosen before it. For a query whose nearest
    documents repeat each other."""

    _methods = ("mmr", "ammr")

    def __init__(
        self,
        index: VectorIndex,
        *,
        k: int = 4,
        fetch_k: int = 20,
        diversity: float = 0.5,
        where: Mapping[str, Any] | None = None,
        min_score: float | None = None,
    ) -> None:
        super().__init__(index, k=k, where=where, min_score=min_score)
        self.fetch_k = max(self.k, checked_count("fetch_k", fetch_k))
        self.diversity = checked_number("diversity", diversity)
        if not 0 <= self.diversity <= 1:
            raise RetrieverConfigError(f"diversity must be from 0 to 1, got {diversity}")

    def _search(self, query: str) -> list[Hit]:
        hits = self.index.mmr(
            query, k=self.k, fetch_k=self.fetch_k, diversity=self.diversity, where=self.where
        )
        return self._kept(hits)

    async def _asearch(self, query: str) -> list[Hit]:
        hits = await self.index.ammr(
            query, k=self.k, fetch_k=self.fetch_k, diversity=self.diversity, where=self.where
        )
        return self._kept(hits)
