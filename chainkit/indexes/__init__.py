"""Indexes (vector stores): documents kept by id with their vectors, searched by a text or a
vector within a metadata filter, most similar first or by maximal marginal relevance. One
protocol (`VectorIndex`); an in-memory index with an exact scan."""

from chainkit.indexes import errors as errors
from chainkit.indexes.base import Filter, Hit, SourceRecords, VectorIndex
from chainkit.indexes.errors import VectorIndexError
from chainkit.indexes.memory import InMemoryIndex

__all__ = [
    "Filter",
    "Hit",
    "InMemoryIndex",
    "SourceRecords",
    "VectorIndex",
    "VectorIndexError",
    "errors",
]
