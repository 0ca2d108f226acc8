"""What every retriever does (`Retriever`): finds the documents that answer a query, best
first, each with its score (`indexes.Hit`). A retriever is a pipeline step taking the query
(a `str`) and giving its documents, and an agent's tool in one line (`as_tool`).

Every search checks its query first (a `str`, not blank, at most `MAX_QUERY_CHARS`
characters, valid Unicode with no NUL) and is a "retriever" run: the trace file, the log and
OpenTelemetry show its query and what it found."""

from __future__ import annotations

import abc

from chainkit._pipe import Pipeable
from chainkit._text import described
from chainkit._threads import in_thread
from chainkit.callbacks.run import retrieval
from chainkit.documents import Document
from chainkit.indexes import Hit
from chainkit.retrievers._tool import RetrieverTool
from chainkit.retrievers.errors import QueryError, RetrieverTypeError
from chainkit.tools import Tool

__all__ = ["MAX_QUERY_CHARS", "Retriever"]

MAX_QUERY_CHARS = 20_000
"""The longest query a retriever takes: a question, or a chat's rewritten question, is far
shorter; a longer one is most often a document piped where its question was meant."""


class Retriever(Pipeable, abc.ABC):
    """Finds documents for a query. A subclass gives `_search` (and `_asearch` when it can
    wait without a worker thread) on a query already checked; `search` and `asearch` check it
    and report the run, `retrieve` and `aretrieve` give the documents alone."""

    name: str = "retriever"
    """The retriever's name in runs: its class's, unless set."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in vars(cls):
            cls.name = cls.__name__

    @abc.abstractmethod
    def _search(self, query: str) -> list[Hit]:
        """The documents found for `query` (checked) with their scores, best first."""

    async def _asearch(self, query: str) -> list[Hit]:
        """`_search` for async code: in a worker thread unless the subclass waits otherwise."""
        return await in_thread(self._search, query)

    def search(self, query: str) -> list[Hit]:
        """The documents found for `query` with their scores, best first; QueryError for a
        query no retriever can search for, RetrieverTypeError for one that is not a str."""
        query = checked_query(query)
        with retrieval(self.name, query) as found:
            found.extend(self._search(query))
        return found

    async def asearch(self, query: str) -> list[Hit]:
        """`search` for async code, never blocking the event loop."""
        query = checked_query(query)
        with retrieval(self.name, query) as found:
            found.extend(await self._asearch(query))
        return found

    def retrieve(self, query: str) -> list[Document]:
        """The documents found for `query`, best first."""
        return [hit.document for hit in self.search(query)]

    async def aretrieve(self, query: str) -> list[Document]:
        """`retrieve` for async code."""
        return [hit.document for hit in await self.asearch(query)]

    def as_tool(
        self, name: str = "search", description: str | None = None, *, max_chars: int = 4000
    ) -> Tool:
        """This retriever as an agent's tool named `name`: called with a query, it answers
        with the documents found, best first, each headed by its id and source, cut to
        `max_chars` characters in all. `description` tells the model when to call it (by
        default: to search the documents). A query it cannot search for (an empty one) is
        the observation's error, for the model to try again."""
        return RetrieverTool(self.search, self.asearch, name, description, max_chars)


def checked_query(query: object) -> str:
    """`query` if a retriever can search for it; else the error naming what is wrong."""
    if not isinstance(query, str):
        raise RetrieverTypeError(f"a query must be a str, got {described(query)}")
    if not query.strip():
        raise QueryError(f"the query is {'empty' if not query else 'only spaces'}: give words")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(
            f"the query is {len(query):,} characters long, over the {MAX_QUERY_CHARS:,} a "
            "retriever takes: search with the question, not a document"
        )
    if "\0" in query:
        raise QueryError(f"the query holds a NUL character at position {query.index(chr(0))}")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as error:
        raise QueryError(
            f"the query is not valid Unicode: a lone surrogate at position {error.start}"
        ) from None
    return query
