"""The errors of retrievers. `RetrieverError` is the root of this package's errors."""

from __future__ import annotations

from chainkit._errors import ChainkitError


class RetrieverError(ChainkitError):
    """A retriever could not do what it was asked."""


class QueryError(RetrieverError, ValueError):
    """A query no retriever can search for: empty, only spaces, or longer than a retriever
    takes. An agent calling a retriever's tool gets the message as its observation."""


class RetrieverConfigError(RetrieverError, ValueError):
    """A retriever was set up with a value it cannot take: a `k` below 1, a `diversity`
    outside 0 to 1, a weight for no retriever, a Hybrid of fewer than two retrievers."""


class RetrieverTypeError(RetrieverError, TypeError):
    """A retriever was given an argument of the wrong type: a query that is not a `str`, an
    index without the methods of `indexes.VectorIndex`, a `k` that is not a whole number."""
