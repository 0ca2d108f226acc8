"""InMemoryIndex: documents and their vectors in this process, searched by an exact scan or
by their terms."""

from __future__ import annotations

import functools
import heapq
import threading
from collections.abc import Iterable, Sequence

from chainkit._search.vectors import dot, scaled_to_unit
from chainkit._text import counted, described
from chainkit._threads import in_thread
from chainkit.documents import Document
from chainkit.indexes._keywords import Keywords, checked_text
from chainkit.indexes._selection import (
    checked_count,
    checked_diversity,
    checked_filter,
    matches,
    most_relevant_and_diverse,
)
from chainkit.indexes.base import Filter, Hit
from chainkit.indexes.errors import IndexConfigError, IndexTypeError
from chainkit.schema.embedder import Embedder

__all__ = ["InMemoryIndex"]


class InMemoryIndex:
    """Documents by id with their vectors, in this process (see `VectorIndex` and
    `SourceRecords`). `embedder` embeds the documents given without vectors and the queries
    given as text; with no embedder, documents given without vectors are kept for
    `keyword_search` alone.

    A search compares the query with every document's vector (cosine, exact) in pure Python,
    as chainkit depends on no array library: about 100 ms for 5,000 vectors of 384 dimensions
    on Python 3.11 on a 2-core machine, less on 3.12+ (`math.sumprod`). Safe to share between
    threads."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        if embedder is not None and not isinstance(embedder, Embedder):
            raise IndexTypeError(
                "embedder must have embed_documents(texts) and embed_query(text), such as "
                f"llms.OpenAIEmbeddings(); got {described(embedder)}"
            )
        self.embedder = embedder
        self._rows: dict[str, tuple[Document, list[float] | None]] = {}
        self._keywords = Keywords()
        self._hashes: dict[str, str] = {}  # source -> the content hash recorded for it
        self._by_source: dict[str, set[str]] = {}  # source -> the ids of its documents
        self._without_vectors = 0  # how many documents were kept with no vector
        self._dimensions: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"InMemoryIndex({len(self._rows)} documents)"

    def __len__(self) -> int:
        return len(self._rows)

    def upsert(
        self, documents: Iterable[Document], vectors: Sequence[Sequence[float]] | None = None
    ) -> None:
        batch = _checked_documents(documents)
        if vectors is None and self.embedder is not None:
            vectors = self.embedder.embed_documents([document.text for document in batch])
        with self._lock:
            self._keep(batch, vectors)

    def delete(self, ids: Iterable[str]) -> int:
        if isinstance(ids, str):
            raise IndexTypeError("delete takes a list of ids, not one str: delete([id])")
        with self._lock:
            return self._drop(ids)

    def source_hashes(self) -> dict[str, str]:
        with self._lock:
            return dict(self._hashes)

    def replace_source(
        self,
        source: str,
        content_hash: str,
        documents: Iterable[Document],
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> None:
        batch = _checked_documents(documents)
        for document in batch:
            if document.metadata.get("source") != source:
                raise IndexConfigError(
                    f"document {document.id!r} has source "
                    f"{document.metadata.get('source')!r}, not {source!r}"
                )
        if vectors is None and self.embedder is not None:
            vectors = self.embedder.embed_documents([document.text for document in batch])
        with self._lock:
            units = self._units(batch, vectors)  # checked before anything changes
            self._drop(list(self._by_source.get(source, ())))
            self._keep(batch, units, scaled=True)
            self._hashes[source] = content_hash

    def delete_sources(self, sources: Iterable[str]) -> int:
        if isinstance(sources, str):
            raise IndexTypeError("delete_sources takes a list of sources, not one str")
        with self._lock:
            dropped = 0
            for source in sources:
                self._hashes.pop(source, None)
                dropped += self._drop(list(self._by_source.get(source, ())))
            return dropped

    def get(self, ids: Iterable[str]) -> list[Document]:
        """The documents of `ids` the index holds, in the order asked."""
        if isinstance(ids, str):
            raise IndexTypeError("get takes a list of ids, not one str: get([id])")
        with self._lock:
            rows = self._rows
            return [rows[id_][0] for id_ in ids if id_ in rows]

    def search(
        self, query: str | Sequence[float], *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]:
        k = checked_count("k", k)
        scored = self._scored(query, where, k)
        return [Hit(document, score) for score, document, _ in scored]

    def keyword_search(self, text: str, *, k: int = 4, where: Filter | None = None) -> list[Hit]:
        return self._keywords.search(text, k, where, self._documents_of)

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
        scored = self._scored(query, where, fetch_k)
        order = most_relevant_and_diverse([(s, unit) for s, _, unit in scored], k, diversity)
        return [Hit(scored[i][1], scored[i][0]) for i in order]

    async def aupsert(
        self, documents: Iterable[Document], vectors: Sequence[Sequence[float]] | None = None
    ) -> None:
        """`upsert` for async code: the embedder's `aembed_documents` is awaited when it has
        one (else `embed_documents` runs in a worker thread), and the vectors are kept in a
        worker thread."""
        batch = _checked_documents(documents)
        if vectors is None and self.embedder is not None:
            embedder = self.embedder
            texts = [document.text for document in batch]
            embed = getattr(embedder, "aembed_documents", None)
            if callable(embed):
                vectors = await embed(texts)
            else:
                vectors = await in_thread(embedder.embed_documents, texts)
        await in_thread(self.upsert, batch, vectors)

    async def asearch(
        self, query: str | Sequence[float], *, k: int = 4, where: Filter | None = None
    ) -> list[Hit]:
        """`search` for async code: a text query embedded as `aupsert` embeds, the scan in a
        worker thread."""
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

    async def _aquery_vector(self, query: str | Sequence[float]) -> Sequence[float]:
        if not isinstance(query, str):
            return query
        embedder = self._needed_embedder("search by text")
        embed = getattr(embedder, "aembed_query", None)
        if callable(embed):
            vector: Sequence[float] = await embed(query)
            return vector
        return await in_thread(embedder.embed_query, query)

    def _scored(
        self, query: str | Sequence[float], where: object, depth: int
    ) -> list[tuple[float, Document, list[float]]]:
        """The `depth` documents matching `where` most similar to `query`, with their
        similarity and vector, most similar first (ties in the order they were added)."""
        wanted = checked_filter(where)
        unit = self._query_unit(query)
        with self._lock:
            if self._without_vectors:
                raise IndexConfigError(
                    f"{counted(self._without_vectors, 'document')} of this index came without "
                    "vectors (it had no embedder): find them with keyword_search"
                )
            rows = [(document, vector) for document, vector in self._rows.values() if vector]
        found = (
            (dot(unit, vector), -position, document, vector)
            for position, (document, vector) in enumerate(rows)
            if not wanted or matches(document.metadata, wanted)
        )
        best = heapq.nlargest(depth, found, key=lambda row: (row[0], row[1]))
        return [(score, document, vector) for score, _, document, vector in best]

    def _query_unit(self, query: str | Sequence[float]) -> list[float]:
        if isinstance(query, str):
            vector: Sequence[float] = self._needed_embedder("search by text").embed_query(query)
        else:
            vector = query
        with self._lock:
            return self._unit(vector)

    def _documents_of(self, ids: Sequence[str]) -> dict[str, Document]:
        with self._lock:
            rows = self._rows
            return {id_: rows[id_][0] for id_ in ids if id_ in rows}

    def _units(
        self, batch: list[Document], vectors: Sequence[Sequence[float]] | None
    ) -> list[list[float]] | None:
        """The vectors of `batch` checked and scaled to length 1, or None for documents kept
        without. Called under the lock."""
        if vectors is None:
            return None
        if len(vectors) != len(batch):
            raise IndexConfigError(
                f"{len(batch)} documents came with {len(vectors)} vectors: give one each"
            )
        return [self._unit(vector) for vector in vectors]

    def _keep(
        self,
        batch: list[Document],
        vectors: Sequence[Sequence[float]] | None,
        *,
        scaled: bool = False,
    ) -> None:
        """Keeps `batch` with its vectors (already units when `scaled`), replacing the
        documents of the same ids. Called under the lock."""
        units = vectors if scaled else self._units(batch, vectors)
        for position, document in enumerate(batch):
            old = self._rows.get(document.id)
            if old is not None:  # replaced in its place: ties keep the order ids came in
                self._forget(document.id, old)
            unit = None if units is None else list(units[position])
            self._rows[document.id] = (document, unit)
            self._without_vectors += unit is None
            source = document.metadata.get("source")
            if isinstance(source, str):
                self._by_source.setdefault(source, set()).add(document.id)
        self._keywords.add(batch)

    def _drop(self, ids: Iterable[str]) -> int:
        """Removes the documents of `ids`; how many there were. Called under the lock."""
        dropped = 0
        for id_ in ids:
            row = self._rows.pop(id_, None)
            if row is not None:
                self._forget(id_, row)
                dropped += 1
        return dropped

    def _forget(self, id_: str, row: tuple[Document, list[float] | None]) -> None:
        """Drops what the index knows of the row of `id_` beside the row itself."""
        document, vector = row
        self._without_vectors -= vector is None
        source = document.metadata.get("source")
        if isinstance(source, str) and source in self._by_source:
            members = self._by_source[source]
            members.discard(id_)
            if not members:
                del self._by_source[source]
        self._keywords.remove((id_,))

    def _needed_embedder(self, doing: str) -> Embedder:
        if self.embedder is None:
            raise IndexConfigError(
                f"this index has no embedder to {doing}: give InMemoryIndex(embedder=...) "
                "or the vectors themselves"
            )
        return self.embedder

    def _unit(self, vector: object) -> list[float]:
        """`vector` scaled to length 1, checked against the index's dimensions (the first
        vector's sets them). Called under the lock."""
        if isinstance(vector, str | bytes) or not isinstance(vector, Sequence) or not vector:
            raise IndexTypeError(
                f"a vector is a non-empty list of numbers, not {described(vector)}"
            )
        try:
            numbers = [float(x) for x in vector]
        except (TypeError, ValueError):
            raise IndexTypeError("a vector holds numbers only") from None
        if self._dimensions is not None and len(numbers) != self._dimensions:
            raise IndexConfigError(
                f"a vector of {len(numbers)} dimensions, where this index's have {self._dimensions}"
            )
        scaled = scaled_to_unit(numbers)
        if scaled is None:
            raise IndexConfigError("a vector holds an infinity or NaN")
        if self._dimensions is None:
            self._dimensions = len(numbers)
        return scaled


def _checked_documents(documents: Iterable[Document]) -> list[Document]:
    if isinstance(documents, Document):
        raise IndexTypeError("documents is a list of documents, not one: give [document]")
    return [_checked_document(document, i) for i, document in enumerate(documents)]


def _checked_document(document: object, position: int) -> Document:
    if not isinstance(document, Document):
        raise IndexTypeError(
            f"documents[{position}] must be a documents.Document, got {described(document)}"
        )
    return document
