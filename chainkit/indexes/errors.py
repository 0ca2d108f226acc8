"""The errors of indexes. `VectorIndexError` is the root of this package's errors."""

from __future__ import annotations

from chainkit._errors import ChainkitError


class VectorIndexError(ChainkitError):
    """An index could not do what it was asked."""


class IndexConfigError(VectorIndexError, ValueError):
    """An index was set up or called with a value it cannot take: a search by text with no
    embedder, a `k` below 1, vectors of another length than the index's, a search by meaning
    in an index whose documents came without vectors, a table name SQL cannot take."""


class IndexTypeError(VectorIndexError, TypeError):
    """An index was given an argument of the wrong type: a document that is not a `Document`,
    a filter that is not a mapping, metadata that is not JSON (for a SQL index)."""
