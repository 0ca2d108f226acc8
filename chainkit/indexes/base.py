"""What every index does (`VectorIndex`): documents kept by id with their vectors, replaced
when added again, deleted by id, and searched by a text or a vector, within the documents
whose metadata match a filter, most similar first or spread out by maximal marginal
relevance. A hit (`Hit`) is a document and its cosine similarity to the query."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from chainkit.documents import Document

__all__ = ["Filter", "Hit", "VectorIndex"]

Filter = Mapping[str, Any]
"""Metadata a document must have to be found: each key's value equal to the one given, or one
of the values given as a list, tuple or set (`{"source": "a.md", "lang": ["en", "fr"]}`)."""


@dataclass(frozen=True, slots=True)
class Hit:
    """A document found, and its cosine similarity to the query (1 the most alike)."""

    document: Document
    score: float


@runtime_checkable
class VectorIndex(Protocol):
    def upsert(
        self, documents: Iterable[Document], vectors: Sequence[Sequence[float]] | None = None
    ) -> None:
        """Keeps `documents`, replacing any of the same id, with their `vectors` (embedded
        by the index's embedder when None)."""

    def delete(self, ids: Iterable[str]) -> int:
        """Removes the documents of `ids`; returns how many there were."""

    def search(
        self, query: str | Sequence[float], *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]:
        """The `k` documents most similar to `query` (a text, embedded as a query, or a
        vector) among those matching `where`, most similar first."""

    def mmr(
        self,
        query: str | Sequence[float],
        *,
        k: int = 4,
        fetch_k: int = 20,
        diversity: float = 0.5,
        where: Filter | None = None,
    ) -> list[Hit]:
        """`k` of the `fetch_k` most similar documents, each chosen for its similarity to
        the query less, weighted by `diversity` (0 to 1), its similarity to those chosen
        before it."""

    async def aupsert(
        self, documents: Iterable[Document], vectors: Sequence[Sequence[float]] | None = None
    ) -> None:
        """`upsert` for async code, never blocking the event loop."""

    async def asearch(
        self, query: str | Sequence[float], *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]:
        """`search` for async code, never blocking the event loop."""

    async def ammr(
        self,
        query: str | Sequence[float],
        *,
        k: int = 4,
        fetch_k: int = 20,
        diversity: float = 0.5,
        where: Filter | None = None,
    ) -> list[Hit]:
        """`mmr` for async code, never blocking the event loop."""

    def __len__(self) -> int: ...
