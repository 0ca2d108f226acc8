"""What every index does (`VectorIndex`): documents kept by id with their vectors, replaced
when added again, deleted by id, and searched by a text or a vector, within the documents
whose metadata match a filter, most similar first or spread out by maximal marginal
relevance; and by the terms of a text (BM25, chainkit's one lexical engine, the tool
retriever's). A hit (`Hit`) is a document and its score: cosine similarity for a search by
meaning, BM25 for a search by terms.

An index also records, per source (a file), the hash of the content its documents were made
from (`SourceRecords`): incremental indexing (`indexes.index_documents`) compares it with the
file's to skip, update or delete, and an index replaces a source's documents and its record in
one step, so an interrupted indexing leaves each source whole, old or new."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from chainkit.documents import Document

__all__ = ["Filter", "Hit", "SourceRecords", "SourceReplacement", "VectorIndex"]

Filter = Mapping[str, Any]
"""Metadata a document must have to be found: each key's value equal to the one given, or one
of the values given as a list, tuple or set (`{"source": "a.md", "lang": ["en", "fr"]}`)."""


@dataclass(frozen=True, slots=True)
class Hit:
    """A document found, and its score: its cosine similarity to the query (1 the most
    alike) from `search` and `mmr`, its BM25 score from `keyword_search`."""

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

    def keyword_search(self, text: str, *, k: int = 4, where: Filter | None = None) -> list[Hit]:
        """The `k` documents whose terms best match `text` by BM25 among those matching
        `where`, best first; documents sharing no term with `text` are never found. Needs no
        embedder."""

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

    async def akeyword_search(
        self, text: str, *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]:
        """`keyword_search` for async code, never blocking the event loop."""

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


@dataclass(frozen=True, slots=True)
class SourceReplacement:
    """A source's new documents (with their vectors, or None to embed them) and the content
    hash to record for it: one item of `SQLIndex.replace_sources`."""

    source: str
    content_hash: str
    documents: Sequence[Document]
    vectors: Sequence[Sequence[float]] | None = None


@runtime_checkable
class SourceRecords(Protocol):
    """The record an index keeps of the sources its documents came from (the `source` of
    their metadata), for incremental indexing. Every index in `chainkit.indexes` has it."""

    def source_hashes(self) -> dict[str, str]:
        """Each source recorded by `replace_source`, with the content hash recorded for it."""

    def replace_source(
        self,
        source: str,
        content_hash: str,
        documents: Iterable[Document],
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> None:
        """Replaces every document whose metadata's `source` is `source` with `documents`
        (embedded as `upsert` embeds them when `vectors` is None) and records `content_hash`
        for it, all in one step: a failure or a crash part way leaves the old documents and
        record."""

    def delete_sources(self, sources: Iterable[str]) -> int:
        """Removes the documents and the records of `sources`; returns how many documents
        there were."""
