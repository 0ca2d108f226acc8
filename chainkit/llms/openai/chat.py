"""OpenAI: a chat model behind the OpenAI API or any OpenAI-compatible server (vLLM, Ollama,
the llama.cpp server, LM Studio), through the official openai package."""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Unpack

from chainkit._tokens import reply_tokens
from chainkit.llms.errors import ModelError
from chainkit.llms.model import BaseModel, ModelRequest
from chainkit.llms.openai._connection import load_sdk
from chainkit.llms.openai._endpoint import OpenAIEndpoint, check_model_name
from chainkit.llms.openai._reply import parse_completion
from chainkit.llms.openai._request import (
    CHAT_PATH,
    build_request,
    post_arguments,
    refusable_fields,
)
from chainkit.llms.openai._stream import StreamRelay
from chainkit.llms.options import CallOptions, DefaultOptions, check_options
from chainkit.llms.output_strategies import StrategyName
from chainkit.llms.retry import DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT, Backoff
from chainkit.schema import Message, ToolInfo

if TYPE_CHECKING:
    from chainkit.llms.cache import ResponseCache
    from chainkit.llms.rate_limit import RateLimiter

DEFAULT_MODEL = "gpt-4o-mini"


# Settings under the names other libraries give them: taken for options, they would go into
# the request body, where a server ignores or refuses them.
class OpenAI(OpenAIEndpoint, BaseModel):
    """A chat model served over the OpenAI chat-completions API.

    Arguments left out are read from OPENAI_MODEL (else gpt-4o-mini), OPENAI_BASE_URL and
    OPENAI_API_KEY; a base URL without a key is fine for local servers. `default_options`
    (temperature=0, seed=1, ...: an `llms.DefaultOptions`) apply to every call, under the
    options a call gives. Options the SDK has no parameter for (reasoning_effort, user...) go
    into the request body all the same, and one only a server knows (top_k) in `extra_body`;
    an option set to None counts as not given.

    A call may also set `timeout` (seconds per attempt, in place of the constructor's),
    `extra_headers` and `extra_query`, which go to the HTTP request, never into the body; an
    `extra_body` dict is merged into the body.

    A call makes up to `max_attempts` attempts, `timeout` seconds each (the whole attempt: a
    stream a server keeps alive with `: ping` comments ends when it passes; in sync code at
    the first piece of the reply after it, or once the server has sent nothing for `timeout`
    seconds), waiting between them as `backoff` (an `llms.Backoff`) says, and reports each
    retry to `handle_retry` of its callbacks; which errors are retried is the retry policy of
    `chainkit.llms.retry`. The error a call ends with says how many attempts it made
    (`ModelError.attempts`).

    With a `cache` (an `llms.ResponseCache`), a call answered before is answered from it (see
    `llms.cache`); `cache=False` keeps the model out of the cache `llms.set_cache` set.

    With a `rate_limiter` (an `llms.RateLimiter`, which many models may share), each attempt
    starts only when the limiter lets it, and a 429 with Retry-After pauses every model that
    shares the limiter.

    Every setting is checked at construction: a base URL must be an http(s) URL with a host,
    `timeout` a finite number of seconds above zero, `max_attempts` at least 1.

    Errors are those of `chainkit.llms.errors`, and never show the key, nor hold the SDK's
    exception (which may) as cause or context.

    With a `streaming_func`, each content delta is handed over as it arrives. When a stream
    breaks and is retried, text already handed over is not handed over again, and if the
    retry's text differs from it, nothing more is. The callbacks hear each attempt as it
    streamed instead: the retry event carries the text the failed attempt had streamed as
    `discarded`, and the next attempt's tokens start the reply over. The returned Message is
    always the whole reply, equal to what a plain call returns. A stream is whole once its
    finish_reason has arrived: if the connection breaks after it, the reply stands (without
    the usage that would have followed) rather than being paid for again. A stream request
    answered with one JSON body (an error, or a server that ignores `stream`) is read as a
    plain reply, and a plain request answered with events is read as a stream.
    Only choice 0 is the reply, and `n` other than 1 is refused.

    Clients are made on first use and kept: `close()` (and `aclose()` in async code, before
    its event loop ends) releases their connections.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff: Backoff | None = None,
        rate_limiter: RateLimiter | None = None,
        cache: ResponseCache | Literal[False] | None = None,
        **default_options: Unpack[DefaultOptions],
    ) -> None:
        if model is None:
            model = os.environ.get("OPENAI_MODEL") or DEFAULT_MODEL
            check_model_name(model, "OPENAI_MODEL")
        else:
            check_model_name(model, "model")
        check_options(default_options)
        self.cache = cache
        self.model = model
        self.default_options = default_options
        super().__init__(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_attempts=max_attempts,
            backoff=backoff,
            rate_limiter=rate_limiter,
        )

    output_strategies: tuple[StrategyName, ...] = ("json_schema", "tool", "json_mode", "prompted")
    """How `llms.generate_object` asks for a typed result, first choice first: a server that
    refuses one's field (`response_format`, `tools`) makes it go on with the next."""

    @property
    def name(self) -> str:
        return self.model

    @property
    def provider(self) -> str:
        return "openai"

    def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Unpack[CallOptions],
    ) -> Message:
        load_sdk()  # before the run starts: the first import is no part of its duration
        return super().generate(messages, tools=tools, **options)

    async def agenerate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Unpack[CallOptions],
    ) -> Message:
        load_sdk()
        return await super().agenerate(messages, tools=tools, **options)

    def _request(self, request: ModelRequest) -> dict[str, Any]:
        options = request.options  # checked by generate, as the defaults were when set
        if self.default_options:
            # A call's option set to None means "not set", so it leaves the default in place.
            options = dict(self.default_options)
            options.update((k, v) for k, v in request.options.items() if v is not None)
        stream = request.streaming_func is not None
        return build_request(
            self.model, request.messages, request.stop, request.tools, options, stream=stream
        )

    def _generate(self, request: ModelRequest) -> Message:
        body = self._request(request)
        attempt: Callable[[], Message]
        if request.streaming_func is None:
            attempt, streamed = functools.partial(self._complete, body), None
        else:
            relay = StreamRelay(request.caller_streaming_func, request.callbacks)
            attempt, streamed = functools.partial(self._stream, body, relay), relay.streamed
        limited = self._limited(body, attempt, reply_tokens)
        fields = functools.partial(refusable_fields, body)
        return self.retry_policy.call(request.callbacks, limited, streamed, fields)

    async def _agenerate(self, request: ModelRequest) -> Message:
        body = self._request(request)
        attempt: Callable[[], Awaitable[Message]]
        if request.streaming_func is None:
            attempt, streamed = functools.partial(self._acomplete, body), None
        else:
            relay = StreamRelay(request.caller_streaming_func, request.callbacks)
            attempt, streamed = functools.partial(self._astream, body, relay), relay.streamed
        limited = self._alimited(body, attempt, reply_tokens)
        fields = functools.partial(refusable_fields, body)
        return await self.retry_policy.acall(request.callbacks, limited, streamed, fields)

    # One attempt each.

    def _complete(self, request: dict[str, Any]) -> Message:
        connection = self._connection
        post = connection.client().post
        arguments = post_arguments(request, read_body=False)
        deadline = connection.deadline(request.get("timeout"))

        def read() -> bytes:
            # Read here, not by the SDK, so that the deadline bounds a body a server trickles.
            response = post(CHAT_PATH, **arguments).http_response
            try:
                parts = []
                for data in response.iter_bytes():
                    parts.append(data)
                    deadline.check()
                return b"".join(parts)
            finally:
                response.close()

        return parse_completion(connection.run(read, request.get("timeout")), connection.redact)

    async def _acomplete(self, request: dict[str, Any]) -> Message:
        connection, arguments = self._connection, post_arguments(request)
        async with connection.leased_client() as client:
            post = client.post
            raw = await connection.arun(
                lambda: post(CHAT_PATH, **arguments), request.get("timeout")
            )
        return parse_completion(raw.http_response.content, connection.redact)

    def _stream(self, request: dict[str, Any], relay: StreamRelay) -> Message:
        connection = self._connection
        chunks = relay.attempt(connection.redact)
        create = connection.client().chat.completions.with_streaming_response.create
        deadline = connection.deadline(request.get("timeout"))

        def read() -> None:
            with create(**request) as response:
                # Read on past [DONE] to the body's end: a body left unread closes its
                # connection, and each streamed call would open (and handshake) a new one.
                done = False
                for data in response.iter_bytes():
                    done = done or chunks.feed(data)
                    deadline.check()

        failure = None
        try:
            connection.run(read, request.get("timeout"))
        except ModelError as error:
            failure = error  # the reply may be whole all the same
        return chunks.message(failure)

    async def _astream(self, request: dict[str, Any], relay: StreamRelay) -> Message:
        connection = self._connection
        chunks = relay.attempt(connection.redact)

        async def read() -> None:
            async with connection.leased_client() as client:
                create = client.chat.completions.with_streaming_response.create
                async with create(**request) as response:
                    # On past [DONE] to the body's end, so the connection is kept (as above).
                    done = False
                    async for data in response.iter_bytes():
                        done = done or chunks.feed(data)

        failure = None
        try:
            await connection.arun(read, request.get("timeout"))
        except ModelError as error:
            failure = error
        return chunks.message(failure)
