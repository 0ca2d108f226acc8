"""Retrievers: the documents that answer a query, as a pipeline step or an agent's tool.

`Lexical` (BM25), `Dense` (meaning), `MMR` (meaning, spread out) search one index; `Hybrid`
fuses several. Every retriever is a step of a pipeline (`retriever | format | prompt |
model`), taking the query and giving its documents, and an agent's tool (`as_tool`)."""

from chainkit.retrievers import errors as errors
from chainkit.retrievers.base import MAX_QUERY_CHARS, Retriever
from chainkit.retrievers.errors import QueryError, RetrieverError
from chainkit.retrievers.hybrid import Hybrid
from chainkit.retrievers.index import MMR, Dense, Lexical

# In plain sorted order, as tests/test_imports.py pins every package's names.
__all__ = [  # noqa: RUF022
    "Dense",
    "Hybrid",
    "Lexical",
    "MAX_QUERY_CHARS",
    "MMR",
    "QueryError",
    "Retriever",
    "RetrieverError",
    "errors",
]
