"""OpenAIEmbeddings: text embeddings from the OpenAI API or an OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chainkit.callbacks import Handler, guard
from chainkit.llms._endpoint import OpenAIEndpoint, check_model_name
from chainkit.llms._openai_wire import parse_embeddings
from chainkit.llms._retry import DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT, Backoff, check_count
from chainkit.llms.errors import ModelTypeError


class OpenAIEmbeddings(OpenAIEndpoint):
    """Embeds texts with `model`, `batch_size` texts per request, in input order.

    The base URL and key are found as for `OpenAI` (arguments, then OPENAI_BASE_URL and
    OPENAI_API_KEY), and each request is retried by the same policy, each retry reported to
    `handle_retry` of the `callbacks` a call gives, as `OpenAI.generate` does.
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
        )

    def embed_documents(
        self, texts: Sequence[str], *, callbacks: Handler | None = None
    ) -> list[list[float]]:
        """One vector per text, in the order of `texts`; retries go to `callbacks`."""
        batches = self._batches(texts, "embed_query")
        policy, handler = self.retry_policy, guard(callbacks)
        return [vector for batch in batches for vector in policy.call(handler, self._embed, batch)]

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
            vectors.extend(await policy.acall(handler, self._aembed, batch))
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

    def _embed(self, batch: list[str]) -> list[list[float]]:
        connection = self._connection
        create = connection.client().embeddings.with_raw_response.create
        raw = connection.run(lambda: create(**self._request(batch)))
        return parse_embeddings(raw.http_response.content, len(batch), connection.redact)

    async def _aembed(self, batch: list[str]) -> list[list[float]]:
        connection = self._connection
        client = await connection.async_client()
        create = client.embeddings.with_raw_response.create
        raw = await connection.arun(lambda: create(**self._request(batch)))
        return parse_embeddings(raw.http_response.content, len(batch), connection.redact)
