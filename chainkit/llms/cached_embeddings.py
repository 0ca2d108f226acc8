"""CachedEmbeddings: any embedder with an embeddings cache in front, so that a text embedded
once (a chunk indexed again unchanged) is looked up by its content hash, not embedded again."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from chainkit._text import counted, described
from chainkit._threads import in_thread
from chainkit.callbacks import Handler
from chainkit.llms._embedder_input import checked_text, checked_texts
from chainkit.llms.embedding_cache import (
    EmbeddingCache,
    InMemoryEmbeddingCache,
    TextKind,
    fresh_lists,
    vector_key,
)
from chainkit.llms.errors import ModelReplyShapeError, ModelTypeError
from chainkit.llms.retry import check_count
from chainkit.schema.embedder import Embedder

__all__ = ["CachedEmbeddings"]


class CachedEmbeddings:
    """Embeds texts with `embedder`, each text's vector looked up first in `cache` (an
    `InMemoryEmbeddingCache` when none is given; a `SQLEmbeddingCache` keeps them across runs
    and machines) by the hash of the text, and of `namespace`: the embedder's identity, by
    default its class and its `model`. Give a namespace of your own when two embedders share
    those but not their vectors (one model name on two servers that mean different models).

    The texts the cache lacks are embedded `batch_size` at a time, each batch kept as soon as
    it is embedded (an interrupted run keeps what it paid for); a text given twice in one
    call is embedded once. Queries are cached apart from documents, as some models embed
    them otherwise. Safe to share between threads."""

    def __init__(
        self,
        embedder: Embedder,
        cache: EmbeddingCache | None = None,
        *,
        namespace: str | None = None,
        batch_size: int = 256,
    ) -> None:
        if not isinstance(embedder, Embedder):
            raise ModelTypeError(
                "embedder must have embed_documents(texts) and embed_query(text), such as "
                f"llms.OpenAIEmbeddings(); got {described(embedder)}"
            )
        if cache is not None and not isinstance(cache, EmbeddingCache):
            raise ModelTypeError(
                "cache must be an embeddings cache (get_many, put_many, clear, stats), such as "
                f"llms.InMemoryEmbeddingCache() or llms.SQLEmbeddingCache(path); got "
                f"{described(cache)}"
            )
        if namespace is not None and not isinstance(namespace, str):
            raise ModelTypeError(f"namespace must be a str, got {described(namespace)}")
        self.embedder = embedder
        self.cache: EmbeddingCache = InMemoryEmbeddingCache() if cache is None else cache
        self.namespace = _namespace_of(embedder) if namespace is None else namespace
        check_count("batch_size", batch_size)
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"CachedEmbeddings({self.namespace!r}, cache={self.cache!r})"

    def embed_documents(
        self, texts: Sequence[str], *, callbacks: Handler | None = None
    ) -> list[list[float]]:
        """One vector per text, in the order of `texts`: from the cache, or embedded (and then
        kept). `callbacks` go to the embedder, when it takes them."""
        return self._embed(checked_texts(texts, "embed_query"), "document", callbacks)

    def embed_query(self, text: str, *, callbacks: Handler | None = None) -> list[float]:
        return self._embed([checked_text(text, "text")], "query", callbacks)[0]

    async def aembed_documents(
        self, texts: Sequence[str], *, callbacks: Handler | None = None
    ) -> list[list[float]]:
        """Async twin of `embed_documents`: the cache's work in a worker thread, the
        embedder's `aembed_documents` when it has one."""
        return await self._aembed(checked_texts(texts, "aembed_query"), "document", callbacks)

    async def aembed_query(self, text: str, *, callbacks: Handler | None = None) -> list[float]:
        return (await self._aembed([checked_text(text, "text")], "query", callbacks))[0]

    def _embed(
        self, texts: list[str], kind: TextKind, callbacks: Handler | None
    ) -> list[list[float]]:
        keys = [vector_key(self.namespace, kind, text) for text in texts]
        known = _found(keys, self.cache.get_many(keys))
        for batch in self._missing(keys, texts, known):
            vectors = self._call(batch, kind, callbacks)
            self._keep(batch, vectors, known)
        return fresh_lists([known[key] for key in keys])

    async def _aembed(
        self, texts: list[str], kind: TextKind, callbacks: Handler | None
    ) -> list[list[float]]:
        keys = [vector_key(self.namespace, kind, text) for text in texts]
        known = _found(keys, await in_thread(self.cache.get_many, keys))
        for batch in self._missing(keys, texts, known):
            vectors = await self._acall(batch, kind, callbacks)
            await in_thread(self._keep, batch, vectors, known)
        return fresh_lists([known[key] for key in keys])

    def _missing(
        self, keys: list[str], texts: list[str], known: dict[str, list[float]]
    ) -> list[list[tuple[str, str]]]:
        """The (key, text) pairs the cache lacks, each once, in batches of `batch_size`."""
        pairs = zip(keys, texts, strict=True)
        missing = list({key: text for key, text in pairs if key not in known}.items())
        size = self.batch_size
        return [missing[start : start + size] for start in range(0, len(missing), size)]

    def _call(
        self, batch: list[tuple[str, str]], kind: TextKind, callbacks: Handler | None
    ) -> list[Any]:
        texts = [text for _, text in batch]
        options = {} if callbacks is None else {"callbacks": callbacks}
        embedder: Any = self.embedder
        if kind == "query":
            return [embedder.embed_query(texts[0], **options)]
        return list(embedder.embed_documents(texts, **options))

    async def _acall(
        self, batch: list[tuple[str, str]], kind: TextKind, callbacks: Handler | None
    ) -> list[Any]:
        texts = [text for _, text in batch]
        options = {} if callbacks is None else {"callbacks": callbacks}
        embedder: Any = self.embedder
        method = "aembed_query" if kind == "query" else "aembed_documents"
        if not hasattr(embedder, method):
            return await in_thread(self._call, batch, kind, callbacks)
        if kind == "query":
            return [await embedder.aembed_query(texts[0], **options)]
        return list(await embedder.aembed_documents(texts, **options))

    def _keep(
        self, batch: list[tuple[str, str]], vectors: list[Any], known: dict[str, list[float]]
    ) -> None:
        if len(vectors) != len(batch):
            raise ModelReplyShapeError(
                f"{self.namespace} gave {counted(len(vectors), 'vector')} for "
                f"{counted(len(batch), 'text')}"
            )
        checked = [_checked_vector(vector, self.namespace) for vector in vectors]
        pairs = [(key, vector) for (key, _), vector in zip(batch, checked, strict=True)]
        self.cache.put_many(pairs)
        known.update(pairs)


def _namespace_of(embedder: object) -> str:
    model = getattr(embedder, "model", None)
    name = type(embedder).__qualname__
    return name if not isinstance(model, str) else f"{name}:{model}"


def _found(keys: list[str], vectors: list[list[float] | None]) -> dict[str, list[float]]:
    return {key: vector for key, vector in zip(keys, vectors, strict=True) if vector is not None}


def _checked_vector(vector: object, namespace: str) -> list[float]:
    """`vector` as a list of floats (an array's numbers too); a vector that is not a non-empty
    run of finite numbers is the embedder's fault, named before it is cached."""
    if isinstance(vector, str | bytes | dict) or not isinstance(vector, Iterable):
        raise ModelReplyShapeError(
            f"{namespace} gave {described(vector)} where a vector (a list of numbers) belongs"
        )
    try:
        numbers = [float(x) for x in vector]
    except (TypeError, ValueError):
        numbers = []
    if not numbers or not all(math.isfinite(x) for x in numbers):
        raise ModelReplyShapeError(
            f"{namespace} gave a vector that is not a non-empty list of finite numbers"
        )
    return numbers
