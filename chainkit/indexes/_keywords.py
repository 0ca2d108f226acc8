"""Keywords: an index's search by terms, on chainkit's one lexical engine (BM25 with MaxScore,
the tool retriever's; `chainkit._search`), over documents kept by id.

A filter is applied to what the engine finds: the engine is asked for a few times `k` hits,
then, while fewer than `k` of them match and it found as many as asked, for twice as many.
A filter most documents match costs one search; one that few match, a few more."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from chainkit._search.bm25 import LexicalIndex
from chainkit._search.terms import terms, tokens
from chainkit._text import described
from chainkit.documents import Document
from chainkit.indexes._selection import checked_count, checked_filter, matches
from chainkit.indexes.base import Hit
from chainkit.indexes.errors import IndexTypeError

__all__ = ["Keywords", "checked_text"]

_FIRST_DEPTH = 4
"""How many times `k` hits the engine is first asked for when a filter may drop some."""

DocumentsOf = Callable[[Sequence[str]], Mapping[str, Document]]
"""The documents of some ids that the index still holds, by id."""


class Keywords:
    """The terms of an index's documents, by document id, searched by BM25. Safe to share
    between threads (the engine locks itself)."""

    def __init__(self) -> None:
        self._engine = LexicalIndex[str]()

    def __len__(self) -> int:
        return len(self._engine)

    def add(self, documents: Iterable[Document]) -> None:
        """Indexes each document's text under its id, replacing what the id had."""
        for document in documents:
            self._engine.add(document.id, terms(document.text))

    def add_terms(self, rows: Iterable[tuple[str, Iterable[str]]]) -> None:
        """Indexes terms already found (an id and the terms of its text, in order)."""
        for id_, found in rows:
            self._engine.add(id_, found)

    def remove(self, ids: Iterable[str]) -> None:
        for id_ in ids:
            self._engine.remove(id_)

    def search(
        self, text: object, k: object, where: object, documents_of: DocumentsOf
    ) -> list[Hit]:
        """The `k` documents matching `where` whose terms best match `text`, best first,
        with their BM25 scores; `documents_of` reads the documents of the ids found."""
        query = tokens(checked_text(text))
        k = checked_count("k", k)
        wanted = checked_filter(where)
        depth = k * _FIRST_DEPTH if wanted else k
        while True:
            found = self._engine.search(query, depth)
            documents = documents_of([id_ for id_, _ in found])
            hits = [
                Hit(documents[id_], score)
                for id_, score in found
                if id_ in documents and (not wanted or matches(documents[id_].metadata, wanted))
            ]
            if len(hits) >= k or len(found) < depth:
                return hits[:k]
            depth *= 2


def checked_text(text: object) -> str:
    if not isinstance(text, str):
        raise IndexTypeError(f"a search by terms takes a str, got {described(text)}")
    return text
