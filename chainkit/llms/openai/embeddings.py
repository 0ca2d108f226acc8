"""OpenAIEmbeddings: text embeddings from the OpenAI API or an OpenAI-compatible server."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from chainkit._text import counted
from chainkit._tokens import reported_count
from chainkit.callbacks import Handler
from chainkit.callbacks.combining import guard
from chainkit.llms.errors import ModelReplyShapeError, ModelTypeError
from chainkit.llms.openai._endpoint import OpenAIEndpoint, check_model_name
from chainkit.llms.openai._reply import Masker, json_object, snippet
from chainkit.llms.retry import DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT, Backoff, check_count

if TYPE_CHECKING:
    from chainkit.llms.rate_limit import RateLimiter

_Embedded = tuple[list[list[float]], int | None]
"""A batch's vectors, and the tokens the server counted for it."""
_counted: Callable[[_Embedded], int | None] = operator.itemgetter(1)


class OpenAIEmbeddings(OpenAIEndpoint):
    """Embeds texts with `model`, `batch_size` texts per request, in input order.

    The base URL and key are found as for `OpenAI` (arguments, then OPENAI_BASE_URL and
    OPENAI_API_KEY), and each request is retried by the same policy, each retry reported to
    `handle_retry` of the `callbacks` a call gives, as `OpenAI.generate` does. A
    `rate_limiter` holds each request as it does for `OpenAI`.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 512,
        timeout: float = DEFAULT_TIMEOUT,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff: Backoff | None = None,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        check_model_name(model, "model")
        check_count("batch_size", batch_size)
        self.model = model
        self.batch_size = batch_size
        super().__init__(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_attempts=max_attempts,
            backoff=backoff,
            rate_limiter=rate_limiter,
        )

    def embed_documents(
        self, texts: Sequence[str], *, callbacks: Handler | None = None
    ) -> list[list[float]]:
        """One vector per text, in the order of `texts`; retries go to `callbacks`."""
        batches = self._batches(texts, "embed_query")
        policy, handler = self.retry_policy, guard(callbacks)
        vectors: list[list[float]] = []
        for batch in batches:
            request = self._request(batch)
            attempt = functools.partial(self._embed, request, len(batch))
            vectors.extend(policy.call(handler, self._limited(request, attempt, _counted))[0])
        return vectors

    def embed_query(self, text: str, *, callbacks: Handler | None = None) -> list[float]:
        return self.embed_documents([text], callbacks=callbacks)[0]

    async def aembed_documents(
        self, texts: Sequence[str], *, callbacks: Handler | None = None
    ) -> list[list[float]]:
        """Async twin of `embed_documents`."""
        batches = self._batches(texts, "aembed_query")
        policy, handler = self.retry_policy, guard(callbacks)
        vectors: list[list[float]] = []
        for batch in batches:
            request = self._request(batch)
            attempt = functools.partial(self._aembed, request, len(batch))
            limited = self._alimited(request, attempt, _counted)
            vectors.extend((await policy.acall(handler, limited))[0])
        return vectors

    async def aembed_query(self, text: str, *, callbacks: Handler | None = None) -> list[float]:
        return (await self.aembed_documents([text], callbacks=callbacks))[0]

    def _batches(self, texts: Sequence[str], for_one_text: str) -> list[list[str]]:
        # A str is a Sequence[str] too: embedded, it would give one vector per character.
        if isinstance(texts, str):
            raise ModelTypeError(
                f"embed_documents takes a list of texts, not one str: "
                f"use {for_one_text}(text) to embed a single text"
            )
        size = self.batch_size
        return [list(texts[start : start + size]) for start in range(0, len(texts), size)]

    def _request(self, batch: list[str]) -> dict[str, Any]:
        # Floats asked for explicitly: left out, the SDK would ask for base64 and decode it.
        return {"model": self.model, "input": batch, "encoding_format": "float"}

    # One attempt each.

    def _embed(self, request: dict[str, Any], count: int) -> _Embedded:
        connection = self._connection
        create = connection.client().embeddings.with_raw_response.create
        raw = connection.run(lambda: create(**request))
        return _parse_embeddings(raw.http_response.content, count, connection.redact)

    async def _aembed(self, request: dict[str, Any], count: int) -> _Embedded:
        connection = self._connection
        async with connection.leased_client() as client:
            create = client.embeddings.with_raw_response.create
            raw = await connection.arun(lambda: create(**request))
        return _parse_embeddings(raw.http_response.content, count, connection.redact)


def _parse_embeddings(body: bytes, count: int, mask: Masker) -> _Embedded:
    """The `count` vectors of an embeddings body, in input order (given by each `index`), and
    the tokens its usage counts (None when it has none)."""
    data = json_object(body, "reply", mask)
    items = data.get("data")
    vectors: list[list[float] | None] = [None] * count
    if isinstance(items, list) and len(items) == count:
        for position, item in enumerate(items):
            index = item.get("index", position) if isinstance(item, dict) else None
            if isinstance(index, int) and 0 <= index < count and vectors[index] is None:
                embedding = item.get("embedding")
                if isinstance(embedding, list):
                    vectors[index] = [float(x) for x in embedding]
    if None in vectors:
        raise ModelReplyShapeError(
            f"expected {counted(count, 'embedding')} indexed 0..{count - 1}, got: "
            f"{mask(snippet(body))!r}"
        )
    usage = data.get("usage")
    tokens = reported_count(usage.get("total_tokens")) if isinstance(usage, dict) else None
    return vectors, tokens  # type: ignore[return-value]  # no None left, checked above
