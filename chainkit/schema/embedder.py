"""The embedder contract, which tool retrieval and the embeddings cache both take."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["Embedder"]


@runtime_checkable
class Embedder(Protocol):
    """Anything that embeds texts, such as `llms.OpenAIEmbeddings`: one vector per text, in
    order. Its async twins (`aembed_documents`, `aembed_query`), when it has them, serve
    async callers (`ToolRetriever.aselect`, `CachedEmbeddings`)."""

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...
