"""What every retriever does (`Retriever`): finds the documents that answer a query, best
first, each with its score (`indexes.Hit`). A retriever is a pipeline step taking the query
(a `str`) and giving its documents, and an agent's tool in one line."""

from __future__ import annotations

import abc

from chainkit._pipe import Pipeable
from chainkit._threads import in_thread
from chainkit.documents import Document
from chainkit.indexes import Hit

__all__ = ["Retriever"]


class Retriever(Pipeable, abc.ABC):
    """Finds documents for a query. A subclass gives `search` (and `asearch` when it can
    wait without a worker thread); `retrieve` and `aretrieve` give the documents alone."""

    name: str = "retriever"

    @abc.abstractmethod
    def search(self, query: str) -> list[Hit]:
        """The documents found for `query` with their scores, best first."""

    async def asearch(self, query: str) -> list[Hit]:
        """`search` for async code, never blocking the event loop (a worker thread unless
        the subclass waits otherwise)."""
        return await in_thread(self.search, query)

    def retrieve(self, query: str) -> list[Document]:
        """The documents found for `query`, best first."""
        return [hit.document for hit in self.search(query)]

    async def aretrieve(self, query: str) -> list[Document]:
        """`retrieve` for async code."""
        return [hit.document for hit in await self.asearch(query)]
