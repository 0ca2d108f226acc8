"""Indexes (vector stores): documents kept by id with their vectors, searched by a text or a
vector within a metadata filter, most similar first or by maximal marginal relevance. One
protocol (`VectorIndex`, with `SourceRecords` for incremental indexing); an in-memory index
with an exact scan; `SQLIndex` in a SQLite file (the embedded default) or PostgreSQL with
pgvector; a folder indexed again adding, updating and deleting only what changed
(`index_documents`)."""

from chainkit.indexes import errors as errors
from chainkit.indexes.base import Filter, Hit, SourceRecords, SourceReplacement, VectorIndex
from chainkit.indexes.errors import VectorIndexError
from chainkit.indexes.indexing import IndexingResult, aindex_documents, index_documents
from chainkit.indexes.memory import InMemoryIndex
from chainkit.indexes.sql import SQLIndex

__all__ = [
    "Filter",
    "Hit",
    "InMemoryIndex",
    "IndexingResult",
    "SQLIndex",
    "SourceRecords",
    "SourceReplacement",
    "VectorIndex",
    "VectorIndexError",
    "aindex_documents",
    "errors",
    "index_documents",
]
