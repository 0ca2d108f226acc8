"""SQLIndex: documents with their vectors and terms in a SQLite file (the embedded default,
offline, one file) or a PostgreSQL database with pgvector (many machines), on the one store
layer (`chainkit._store`)."""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from chainkit._search.terms import terms
from chainkit._store import Caller, Cursor, Database, json_text, open_database
from chainkit._text import counted, described
from chainkit.documents import Document
from chainkit.indexes._inputs import (
    check_dimensions,
    check_sources,
    checked_documents,
    checked_embedder,
    checked_ids,
    unit_vector,
    vectors_for,
)
from chainkit.indexes._keywords import Keywords, checked_text
from chainkit.indexes._matrix import VectorMatrix, packed
from chainkit.indexes._methods import IndexMethods
from chainkit.indexes._selection import (
    matches,
)
from chainkit.indexes._sql_tables import IDS_PER_READ, Statements, checked_table, pushed_filter
from chainkit.indexes.base import Filter, Hit, SourceReplacement
from chainkit.indexes.errors import IndexConfigError, IndexTypeError
from chainkit.schema.embedder import Embedder

__all__ = ["SQLIndex"]

T = TypeVar("T")

_COLUMNS = frozenset({"id", "source", "text", "metadata", "terms", "vector"})
VERSION = 1
"""The schema version of an index's tables, recorded under "index:<table>"."""


@dataclass(frozen=True, slots=True)
class _Row:
    """A document as its row keeps it."""

    id: str
    source: str | None
    text: str
    metadata: str
    terms: str
    vector: Any  # SQLite: packed float32; PostgreSQL: pgvector's text; None: no vector
    dimensions: int | None

    def values(self) -> tuple[Any, ...]:
        return (self.id, self.source, self.text, self.metadata, self.terms, self.vector)


class SQLIndex(IndexMethods):
    """An index (see `VectorIndex` and `SourceRecords`) in the database `where`: a SQLite
    file's path (made if missing), a `postgresql://` DSN (needs the postgres extra and the
    pgvector extension, made if missing when the user may), or a database already open that
    other stores share. `table` names its tables (`table`, `table_sources`, `table_state`),
    so that one database holds several indexes.

    `embedder` embeds the documents given without vectors and the queries given as text.
    With none, documents given without vectors are kept without them: such an index is
    searched by `keyword_search` (BM25), and a search by meaning raises IndexConfigError.

    Every write (`upsert`, `delete`, `replace_source`, `delete_sources`) is one transaction,
    all of it or nothing. A search by terms uses chainkit's one BM25 engine, kept in this
    process: built from the rows' stored terms on the first keyword search (stored, as
    reading 100,000 chunks' terms again would add about 7 s to that load), kept current by
    this object's writes, built again when another object, process or machine wrote the
    index (each write bumps a revision the search reads first). A search by meaning on
    SQLite scans the vectors exactly, kept in memory in the same way (numpy does the scan
    when installed; see `_matrix`); on PostgreSQL, pgvector's HNSW index finds them
    (approximate, as HNSW is, for large tables). Safe to share between threads; several
    processes and machines may share the database."""

    def __init__(
        self,
        where: str | os.PathLike[str] | Database,
        embedder: Embedder | None = None,
        *,
        table: str = "chainkit_documents",
    ) -> None:
        self.embedder = checked_embedder(embedder)
        table = checked_table(table)
        self._db = open_database(where)
        self._owned = self._db is not where
        self._name = f"SQLIndex({self._db.where}, table={table!r})"
        self._caller = Caller(
            self._name,
            f"{table}, {table}_sources and {table}_state",
            "the index holds what it held before this call",
        )
        self._sql = Statements(self._db.dialect, table)
        self._postgres = self._db.dialect == "postgresql"
        self._lock = threading.Lock()  # the in-memory copies: taken inside the database's
        self._matrix: VectorMatrix | None = None
        self._keywords: Keywords | None = None
        self._seen = {"matrix": -1, "keywords": -1}  # the revision each copy reflects
        try:
            if self._postgres:
                self._read("look for pgvector", _check_pgvector)
            self._check_columns(table)
            create = {self._db.dialect: self._sql.create}
            self._db.ensure_table(f"index:{table}", VERSION, create, by=self._caller)
            self._iterative_scan = self._postgres and self._read(
                "read pgvector's version", _has_iterative_scan
            )
        except BaseException:
            if self._owned:
                self._db.close()
            raise

    def __repr__(self) -> str:
        return self._name  # the database's masked name: never a password

    def _check_columns(self, table: str) -> None:
        """Checks that `table`, when it exists, is an index's: a table of that name made by
        something else (`chainkit_history`, say) is never written."""
        found = self._read("read the table's columns", lambda c: self._db.columns(c, table))
        missing = sorted(_COLUMNS - found)
        if found and missing:
            raise IndexConfigError(
                f"table {table!r} of {self._db.where} is not an index's (it has no column "
                f"{', '.join(missing)}): give SQLIndex another table name"
            )

    def __len__(self) -> int:
        (count,) = self._read(
            "count the documents", lambda c: c.execute(self._sql.count).fetchone()
        )
        return int(count)

    def close(self) -> None:
        """Closes the database, when the index opened it (not one it was given open)."""
        if self._owned:
            self._db.close()

    # -- writing

    def upsert(
        self, documents: Iterable[Document], vectors: Sequence[Sequence[float]] | None = None
    ) -> None:
        batch = checked_documents(documents)
        rows = self._rows(batch, self._embedded(batch, vectors))
        if rows:
            self._write("add documents", lambda cursor: ([], self._insert(cursor, rows)))

    def delete(self, ids: Iterable[str]) -> int:
        wanted = list(dict.fromkeys(checked_ids(ids, "delete")))

        def delete(cursor: Cursor) -> tuple[list[str], list[_Row]]:
            removed = []
            for id_ in wanted:
                removed += [row[0] for row in cursor.execute(self._sql.delete, (id_,)).fetchall()]
            return removed, []

        return len(self._write("delete documents", delete)) if wanted else 0

    def replace_source(
        self,
        source: str,
        content_hash: str,
        documents: Iterable[Document],
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> None:
        source, content_hash = (
            _checked_text("a source", source),
            _checked_text("a hash", content_hash),
        )
        batch = checked_documents(documents)
        check_sources(batch, source)
        rows = self._rows(batch, self._embedded(batch, vectors))

        def replace(cursor: Cursor) -> tuple[list[str], list[_Row]]:
            removed = self._removed_source(cursor, source, forget=False)
            self._insert(cursor, rows)
            cursor.execute(self._sql.record_source, (source, content_hash))
            return removed, rows

        self._write(f"replace source {source!r}", replace)

    def replace_sources(self, replacements: Iterable[SourceReplacement]) -> None:
        """`replace_source` for each of several sources, all in one transaction: a failure
        or a crash part way leaves every one of them as it was. Incremental indexing writes
        its batches so, a commit for many small files rather than one each."""
        prepared = []
        for replacement in replacements:
            if not isinstance(replacement, SourceReplacement):
                raise IndexTypeError(
                    "replace_sources takes SourceReplacement(source, content_hash, documents, "
                    f"vectors) items, got {described(replacement)}"
                )
            source = _checked_text("a source", replacement.source)
            content_hash = _checked_text("a hash", replacement.content_hash)
            batch = checked_documents(replacement.documents)
            check_sources(batch, source)
            rows = self._rows(batch, self._embedded(batch, replacement.vectors))
            prepared.append((source, content_hash, rows))

        def replace(cursor: Cursor) -> tuple[list[str], list[_Row]]:
            removed: list[str] = []
            written: list[_Row] = []
            for source, content_hash, rows in prepared:
                removed += self._removed_source(cursor, source, forget=False)
                written += self._insert(cursor, rows)
                cursor.execute(self._sql.record_source, (source, content_hash))
            return removed, written

        if prepared:
            self._write(f"replace {len(prepared)} sources", replace)

    def delete_sources(self, sources: Iterable[str]) -> int:
        wanted = list(dict.fromkeys(checked_ids(sources, "delete_sources", "source")))

        def delete(cursor: Cursor) -> tuple[list[str], list[_Row]]:
            removed = []
            for source in wanted:
                removed += self._removed_source(cursor, source, forget=True)
            return removed, []

        return len(self._write("delete sources", delete)) if wanted else 0

    def source_hashes(self) -> dict[str, str]:
        rows = self._read(
            "read the sources", lambda c: c.execute(self._sql.source_hashes).fetchall()
        )
        return dict(rows)

    def get(self, ids: Iterable[str]) -> list[Document]:
        """The documents of `ids` the index holds, in the order asked."""
        wanted = checked_ids(ids, "get")
        found = self._documents_of(wanted)
        return [found[id_] for id_ in wanted if id_ in found]

    # -- searching

    def keyword_search(self, text: str, *, k: int = 4, where: Filter | None = None) -> list[Hit]:
        checked_text(text)
        return self._fresh_keywords().search(text, k, where, self._documents_of)

    # -- rows

    def _rows(self, batch: list[Document], vectors: Sequence[Sequence[float]] | None) -> list[_Row]:
        """`batch` as rows, each with its vector scaled to length 1 (or none, when `vectors`
        is None), all of one length."""
        units: Sequence[list[float] | None] = (
            [None] * len(batch)
            if vectors is None
            else [unit_vector(vector) for vector in vectors_for(batch, vectors)]
        )
        lengths = sorted({len(unit) for unit in units if unit is not None})
        if len(lengths) > 1:
            raise IndexConfigError(f"vectors of {lengths} dimensions in one batch: give one length")
        return [self._row(document, unit) for document, unit in zip(batch, units, strict=True)]

    def _row(self, document: Document, unit: list[float] | None) -> _Row:
        source = document.metadata.get("source")
        try:
            metadata = json_text(dict(document.metadata))
        except (TypeError, ValueError) as error:
            raise IndexTypeError(
                f"document {document.id!r}: its metadata must be JSON values (str, numbers, "
                f"bools, None, lists and dicts of them): {error}"
            ) from None
        vector: Any = None
        if unit is not None:
            vector = pgvector_text(unit) if self._postgres else packed(unit)
        return _Row(
            document.id,
            source if isinstance(source, str) else None,
            document.text,
            metadata,
            " ".join(terms(document.text)),  # a term holds no space
            vector,
            None if unit is None else len(unit),
        )

    def _insert(self, cursor: Cursor, rows: list[_Row]) -> list[_Row]:
        dimensions = next((row.dimensions for row in rows if row.dimensions), None)
        if dimensions is not None:
            self._set_dimensions(cursor, dimensions)
        cursor.executemany(self._sql.upsert, [row.values() for row in rows])
        return rows

    def _set_dimensions(self, cursor: Cursor, dimensions: int) -> None:
        """Checks `dimensions` against the index's, which the first vector sets (and, on
        PostgreSQL, types the column and makes its HNSW index)."""
        _, recorded = cursor.execute(self._sql.state).fetchone()
        check_dimensions(dimensions, recorded)
        if recorded is None:
            cursor.execute(self._sql.set_dimensions, (dimensions,))
            for statement in self._sql.typed_vectors:
                cursor.execute(statement.format(n=dimensions))

    def _removed_source(self, cursor: Cursor, source: str, *, forget: bool) -> list[str]:
        removed = [row[0] for row in cursor.execute(self._sql.delete_source, (source,)).fetchall()]
        if forget:
            cursor.execute(self._sql.forget_source, (source,))
        return removed

    def _write(
        self, doing: str, change: Callable[[Cursor], tuple[list[str], list[_Row]]]
    ) -> list[str]:
        """`change` (returning the ids it removed and the rows it wrote) in one transaction
        that bumps the revision; the in-memory copies follow. Returns the ids removed."""

        def work(cursor: Cursor) -> tuple[int, list[str], list[_Row]]:
            # The state row first, in every write: on PostgreSQL its lock orders the writers
            # of the index, so that two never wait on each other's rows.
            cursor.execute(self._sql.state).fetchone()
            removed, written = change(cursor)
            (revision,) = cursor.execute(self._sql.bump).fetchone()
            return int(revision), removed, written

        with self._db.held():
            revision, removed, written = self._run(doing, work)
            with self._lock:
                self._follow(revision, removed, written)
        return removed

    def _follow(self, revision: int, removed: list[str], written: list[_Row]) -> None:
        """Brings the in-memory copies from the revision before `revision` to it; a copy of
        another revision (another writer wrote in between) is dropped, to be loaded again."""
        if self._keywords is not None and self._seen["keywords"] == revision - 1:
            self._keywords.remove(removed)
            self._keywords.add_terms((row.id, row.terms.split()) for row in written)
            self._seen["keywords"] = revision
        else:
            self._keywords = None
        if self._matrix is not None and self._seen["matrix"] == revision - 1:
            self._matrix.remove(removed)
            self._matrix.remove(row.id for row in written if row.vector is None)
            for row in written:
                if row.vector is not None:
                    self._matrix.put(row.id, row.vector)
            self._seen["matrix"] = revision
        else:
            self._matrix = None

    # -- reading

    def _revision(self) -> tuple[int, int | None]:
        """The index's revision and its vectors' dimensions (None: no vector yet)."""
        row = self._read("read the revision", lambda c: c.execute(self._sql.revision).fetchone())
        return int(row[0]), row[1]

    def _fresh_keywords(self) -> Keywords:
        """The terms of the index's documents, loaded from the rows on the first search and
        again once another writer wrote."""
        with self._db.held():
            revision, _ = self._revision()
            if self._keywords is None or self._seen["keywords"] != revision:

                def load(cursor: Cursor) -> tuple[Keywords, int]:
                    (now, _) = cursor.execute(self._sql.revision).fetchone()
                    keywords = Keywords()
                    rows = cursor.execute(self._sql.all_terms).fetchall()
                    keywords.add_terms((id_, stored.split()) for id_, stored in rows)
                    return keywords, int(now)

                keywords, loaded = self._read("load the terms", load)
                with self._lock:
                    self._keywords, self._seen["keywords"] = keywords, loaded
            return self._keywords

    def _fresh_matrix(self) -> VectorMatrix | None:
        """The vectors of the index's documents, loaded as `_fresh_keywords` loads terms;
        None when it holds none."""
        with self._db.held():
            revision, dimensions = self._revision()
            if not self._has_vectors(dimensions):
                return None
            if self._matrix is None or self._seen["matrix"] != revision:

                def load(cursor: Cursor) -> tuple[VectorMatrix, int]:
                    (now, width) = cursor.execute(self._sql.revision).fetchone()
                    matrix = VectorMatrix(width)
                    for id_, blob in cursor.execute(self._sql.all_vectors).fetchall():
                        matrix.put(id_, blob)
                    return matrix, int(now)

                matrix, loaded = self._read("load the vectors", load)
                with self._lock:
                    self._matrix, self._seen["matrix"] = matrix, loaded
            return self._matrix

    def _has_vectors(self, dimensions: int | None) -> bool:
        """Whether the index holds vectors (`dimensions` is not None); raises when any of
        its documents has none, as a search by meaning would miss it."""
        (without,) = self._read(
            "count the documents without vectors",
            lambda c: c.execute(self._sql.without_vectors).fetchone(),
        )
        if without:
            raise IndexConfigError(
                f"{counted(without, 'document')} of this index came without vectors (it had "
                "no embedder): find them with keyword_search"
            )
        return dimensions is not None

    def _nearest(
        self, unit: list[float], where: Filter, depth: int
    ) -> list[tuple[float, Document, list[float]]]:
        if self._postgres:
            return self._scored_by_pgvector(unit, where, depth)
        matrix = self._fresh_matrix()
        if matrix is None:
            return []
        check_dimensions(len(unit), matrix.dimensions)
        within = self._matching_ids(where) if where else None
        with self._lock:
            nearest = matrix.nearest(unit, depth, within)
            vectors = {id_: matrix.vector(id_) for id_, _ in nearest}
        documents = self._documents_of([id_ for id_, _ in nearest])
        return [(score, documents[id_], vectors[id_]) for id_, score in nearest if id_ in documents]

    def _scored_by_pgvector(
        self, unit: list[float], where: Filter, depth: int
    ) -> list[tuple[float, Document, list[float]]]:
        """`_nearest` by pgvector: the nearest rows meeting the filter pushed into SQL, read in
        HNSW's relaxed order, asked for again four times as many while `matches` drops some
        and too few are left."""
        condition, parameters = pushed_filter("postgresql", where)
        query = self._sql.nearest(condition)
        vector = pgvector_text(unit)
        limit = depth
        while True:

            def nearest(cursor: Cursor, limit: int = limit) -> tuple[Any, list[Any]]:
                state = cursor.execute(self._sql.revision).fetchone()
                if state[1] is None:
                    return state, []
                check_dimensions(len(unit), state[1])
                cursor.execute(f"SET LOCAL hnsw.ef_search = {min(1000, max(40, limit))}")
                if self._iterative_scan:  # a filter then finds as many as there are
                    cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                rows = cursor.execute(query, (vector, *parameters, vector, limit)).fetchall()
                return state, rows

            state, rows = self._read("search by meaning", nearest)
            if not self._has_vectors(state[1]):
                return []
            found = [row for row in rows if not where or matches(row[3], where)]
            if len(found) >= depth or len(rows) < limit:
                break
            limit *= 4
        found.sort(key=lambda row: (-_similarity(row[5]), row[0]))
        return [
            (_similarity(distance), Document(text, metadata, id=id_), json.loads(vector_text))
            for _, id_, text, metadata, vector_text, distance in found[:depth]
        ]

    def _matching_ids(self, where: Filter) -> set[str]:
        """The ids of the documents whose metadata match `where` (found by SQL, checked by
        `matches`)."""
        condition, parameters = pushed_filter(self._db.dialect, where)
        query = self._sql.metadata_of_all + (f" WHERE {condition}" if condition else "")
        rows = self._read("filter documents", lambda c: c.execute(query, parameters).fetchall())
        return {id_ for id_, metadata in rows if matches(self._metadata(metadata), where)}

    def _documents_of(self, ids: Sequence[str]) -> dict[str, Document]:
        """The documents of `ids` the index holds, by id."""
        wanted = list(dict.fromkeys(ids))

        def read(cursor: Cursor) -> dict[str, Document]:
            found = {}
            for start in range(0, len(wanted), IDS_PER_READ):
                part = wanted[start : start + IDS_PER_READ]
                part += part[-1:] * (IDS_PER_READ - len(part))
                for id_, text, metadata in cursor.execute(self._sql.documents, part).fetchall():
                    found[id_] = Document(text, self._metadata(metadata), id=id_)
            return found

        return self._read("read documents", read) if wanted else {}

    def _metadata(self, stored: Any) -> dict[str, Any]:
        """A row's metadata: psycopg reads jsonb as it is, SQLite's JSON text is parsed."""
        return stored if isinstance(stored, dict) else json.loads(stored)

    def _run(self, doing: str, work: Callable[[Cursor], T]) -> T:
        return self._db.run(doing, work, by=self._caller)

    def _read(self, doing: str, work: Callable[[Cursor], T]) -> T:
        """`work` in a transaction that only reads (on SQLite, taking no write lock)."""
        return self._db.run(doing, work, by=self._caller, write=False)


def pgvector_text(unit: Sequence[float]) -> str:
    """`unit` as pgvector reads a vector: 9 significant digits, as many as a float32 holds
    (formatted with %, a third of repr's time)."""
    return "[" + ",".join(["%.9g"] * len(unit)) % tuple(unit) + "]"


def _check_pgvector(cursor: Cursor) -> None:
    """Checks that the server can make the pgvector extension (`vector`) a PostgreSQL index
    keeps its vectors in."""
    found = "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
    if cursor.execute(found).fetchone() is None:
        raise IndexConfigError(
            "this PostgreSQL server has no pgvector extension, which SQLIndex keeps vectors "
            "in: install it on the server (a package such as postgresql-15-pgvector, or from "
            "source), then CREATE EXTENSION vector in the database as a superuser"
        )


def _has_iterative_scan(cursor: Cursor) -> bool:
    """Whether pgvector is 0.8 or later: the first to scan an HNSW index on for more rows
    while a filter drops those it found (else a filtered search finds fewer)."""
    row = cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    numbers = [int(part) for part in str(row[0]).split(".")[:2] if part.isdigit()]
    return numbers >= [0, 8]


def _similarity(distance: float) -> float:
    """pgvector's cosine distance as a similarity; a zero vector, whose distance is NaN,
    is alike nothing."""
    return 0.0 if math.isnan(distance) else 1.0 - distance


def _checked_text(what: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise IndexTypeError(f"{what} is a non-empty str, got {value!r}")
    return value
