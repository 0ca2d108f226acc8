"""Retrievers: the documents that answer a query, as a pipeline step or an agent's tool."""

from chainkit.retrievers.base import Retriever

__all__ = ["Retriever"]
