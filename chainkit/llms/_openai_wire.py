"""The wire layer of the OpenAI backend, shared by its sync and async paths.

`Connection` resolves where the server is, owns the SDK clients and runs each attempt,
turning SDK errors into chainkit's; the functions build requests and read replies. Replies
are read from what the server sent, plain JSON through `Message.from_dict` and streams line
by line, which is cheaper than the SDK's typed objects. The openai package is imported on
first use only."""

from __future__ import annotations

import json
import os
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, TypeVar

from chainkit._redact import mask_key, redact
from chainkit._text import shorten
from chainkit.llms._retry import retry_after_seconds
from chainkit.llms.errors import (
    ModelConfigError,
    ModelConnectionError,
    ModelError,
    ModelReplyShapeError,
    ModelResponseError,
    ModelStatusError,
    ModelTimeoutError,
)
from chainkit.llms.model import StreamingFunc
from chainkit.schema import Message, ResponseMeta, TokenUsage, ToolCall, ToolInfo
from chainkit.schema.concat import ConcatError, concat_messages

if TYPE_CHECKING:
    import asyncio

    import openai

KEYLESS = "not-needed"
"""Sent as the key to servers that need none: the SDK refuses to run without one."""

# Options `create` has a parameter of its own for: fields of the request body, and settings of
# the HTTP request (timeout, headers, query) that must not reach the body, where a server
# would refuse an unknown key and a header's value, perhaps a credential, does not belong.
# Any other option goes into extra_body.
_SDK_PARAMETERS = frozenset(
    (
        *("model", "stop", "temperature", "max_tokens", "top_p", "seed"),
        *("timeout", "extra_headers", "extra_query"),
    )
)
_SNIPPET = 200
_NOT_JSON = object()

T = TypeVar("T")

Masker = Callable[[str], str]
"""Masks the API key in a text; `Connection.redact`."""


class Connection:
    """Where an OpenAI-compatible server is and how to reach it.

    Arguments left out are read from OPENAI_BASE_URL and OPENAI_API_KEY. The sync client is
    made on first use and kept; the async one likewise, per event loop, since its pooled
    connections belong to the loop that opened them.
    """

    def __init__(self, base_url: str | None, api_key: str | None, timeout: float) -> None:
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        if self._api_key is None and self.base_url is None:
            raise ModelConfigError(
                "no API key and no base URL: pass api_key= or base_url=, or set "
                "OPENAI_API_KEY or OPENAI_BASE_URL (a local server needs only the base URL)"
            )
        self.timeout = timeout
        self._client: openai.OpenAI | None = None
        self._lock = threading.Lock()
        self._async_client: openai.AsyncOpenAI | None = None
        self._async_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Clients, their pools and the lock belong to this process: a copy makes its own.
        state = dict(self.__dict__)
        for name in ("_client", "_async_client", "_async_loop", "_lock"):
            del state[name]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._client = self._async_client = self._async_loop = None
        self._lock = threading.Lock()

    @property
    def masked_key(self) -> str | None:
        """The key as a repr may show it; None when there is none."""
        return mask_key(self._api_key) if self._api_key else None

    def redact(self, text: str) -> str:
        return redact(text, self._api_key)

    def client(self) -> openai.OpenAI:
        if self._client is None:
            with self._lock:  # threads sharing one model share one client, and its pool
                return self._locked_client()
        return self._client

    def _locked_client(self) -> openai.OpenAI:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(**self._client_options())
        return self._client

    async def async_client(self) -> openai.AsyncOpenAI:
        import asyncio  # here, not at the top: importing chainkit.llms loads no asyncio

        loop = asyncio.get_running_loop()
        client, client_loop = self._async_client, self._async_loop
        if client is not None and client_loop is not None and client_loop() is loop:
            return client
        import openai

        self._async_client = openai.AsyncOpenAI(**self._client_options())
        self._async_loop = weakref.ref(loop)
        if client is not None:
            await _discard(client, client_loop() if client_loop is not None else None)
        return self._async_client

    def _client_options(self) -> dict[str, Any]:
        # Retries are ours (tenacity), so the SDK makes exactly one attempt per call.
        return {
            "api_key": self._api_key or KEYLESS,
            "base_url": self.base_url,
            "timeout": self.timeout,
            "max_retries": 0,
        }

    def close(self) -> None:
        """Closes the sync client's connections; a later call opens new ones."""
        if self._client is not None:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        """Closes the async client's connections, if they belong to the running loop."""
        import asyncio

        client, loop = self._async_client, self._async_loop
        self._async_client = self._async_loop = None
        if client is not None and loop is not None and loop() is asyncio.get_running_loop():
            await client.close()

    def run(self, attempt: Callable[[], T], timeout: float | None = None) -> T:
        """Runs one attempt, raising the SDK's errors as chainkit's, key masked; `timeout` is
        the attempt's own, if it has one.

        The error is raised after the except block, so that neither its __cause__ nor its
        __context__ holds the SDK's exception: that one's text may quote the key, and its
        request carries it.
        """
        try:
            return attempt()
        except Exception as error:
            failure = self._translated(error, timeout)
            if failure is None:
                raise
        raise failure

    async def arun(self, attempt: Callable[[], Awaitable[T]], timeout: float | None = None) -> T:
        """Async twin of `run`."""
        try:
            return await attempt()
        except Exception as error:
            failure = self._translated(error, timeout)
            if failure is None:
                raise
        raise failure

    def _translated(self, error: Exception, timeout: float | None) -> ModelError | None:
        """chainkit's error for an error of the SDK or its HTTP library; None for any other."""
        import openai

        seconds = self.timeout if timeout is None else timeout
        if isinstance(error, openai.APIStatusError):
            return ModelStatusError(
                error.status_code,
                self.redact(_server_message(error)),
                url=self.redact(f"{error.request.method} {error.request.url}"),
                retry_after=retry_after_seconds(error.response.headers),
            )
        if isinstance(error, openai.APITimeoutError):
            url = self.redact(str(error.request.url))
            return ModelTimeoutError(f"{url} did not answer within {seconds} s")
        if isinstance(error, openai.APIConnectionError):
            url, cause = self.redact(str(error.request.url)), self.redact(_root_cause(error))
            return ModelConnectionError(f"the connection to {url} failed: {cause}")
        # Raised while a streamed body is read: the SDK wraps only the request itself.
        if isinstance(error, _http_errors("TimeoutException")):
            text = self.redact(str(error))
            return ModelTimeoutError(f"the stream stalled for more than {seconds} s: {text}")
        if isinstance(error, _http_errors("TransportError")):
            text = self.redact(str(error))
            return ModelConnectionError(f"the connection broke while reading the stream: {text}")
        if isinstance(error, openai.APIError):
            text = self.redact(error.message)
            return ModelResponseError(f"the server reported an error in its reply: {text}")
        return None


def _http_errors(name: str) -> tuple[type[Exception], ...]:
    """The exception class `name` of the HTTP library the openai package runs on (httpx, or
    httpx2 in newer releases), whichever it has loaded."""
    found = (getattr(sys.modules.get(module), name, None) for module in ("httpx2", "httpx"))
    return tuple(cls for cls in found if isinstance(cls, type) and issubclass(cls, Exception))


async def _discard(client: openai.AsyncOpenAI, loop: asyncio.AbstractEventLoop | None) -> None:
    """Lets go of a client made in another event loop. If that loop has ended, the client is
    marked closed first: left open, the SDK would try to close it when collected, on whatever
    loop runs then, and log the failure. (Closing its connections fails, as they belong to the
    ended loop; their sockets are freed with the client.)"""
    if loop is None or loop.is_closed():
        with suppress(RuntimeError):
            await client.close()


def _server_message(error: openai.APIStatusError) -> str:
    body = error.body  # the "error" object of a JSON error body, or the body's text
    if isinstance(body, Mapping):
        message = body.get("message") or body.get("detail") or body.get("error")
        if message:
            return str(message)[:1000]
    if isinstance(body, str) and body:
        return body[:1000]
    return "(no message in the reply)"


def _root_cause(error: BaseException) -> str:
    while error.__cause__ is not None:
        error = error.__cause__
    return f"{type(error).__name__}: {error}"


def build_request(
    model: str,
    messages: Sequence[Message],
    stop: Sequence[str] | None,
    tools: Sequence[ToolInfo] | None,
    options: Mapping[str, Any],
    *,
    stream: bool,
) -> dict[str, Any]:
    """Keyword arguments for `chat.completions.create`.

    Options the SDK has a parameter for go there (so `timeout`, `extra_headers` and
    `extra_query` set the HTTP request); any other goes into `extra_body`, so it reaches the
    server rather than being dropped. Options set to None are left out.
    """
    request: dict[str, Any] = {"model": model}
    extra: dict[str, Any] = {}
    for key, value in options.items():
        if value is None:
            continue
        if key in _SDK_PARAMETERS:
            request[key] = value
        elif key == "extra_body":
            extra.update(value)
        else:
            extra[key] = value
    request["messages"] = [m.to_dict(request=True) for m in messages]
    stop = stop or request.get("stop")
    if stop:
        request["stop"] = [stop] if isinstance(stop, str) else list(stop)
    if tools:
        request["tools"] = [t.to_dict() for t in tools]
    if stream:
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
    if extra:
        request["extra_body"] = extra
    return request


def parse_completion(body: bytes, mask: Masker) -> Message:
    """The reply message of a chat completion body; `mask` hides the key in error texts."""
    data = _json_object(body, "reply", mask)
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise ModelReplyShapeError(
            f"the server's reply has no choices[0].message: {mask(_snippet(body))!r}"
        )
    return _reply(choice["message"], choice.get("finish_reason"), data.get("usage"))


def parse_embeddings(body: bytes, count: int, mask: Masker) -> list[list[float]]:
    """The `count` vectors of an embeddings body, in input order (given by each `index`)."""
    items = _json_object(body, "reply", mask).get("data")
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
            f"expected {count} embeddings indexed 0..{count - 1}, got: {mask(_snippet(body))!r}"
        )
    return vectors  # type: ignore[return-value]  # no None left, checked above


def _json_object(payload: str | bytes, what: str, mask: Masker) -> dict[str, Any]:
    """The JSON object of a reply body or stream event (`what` names which). Not JSON is
    ModelResponseError; another JSON value, ModelReplyShapeError; an object with an `error`,
    ModelResponseError with its message."""
    try:
        data = json.loads(payload)
    except ValueError:
        # Raised below, out of this block: the decode error would keep the whole payload.
        data = _NOT_JSON
    if data is _NOT_JSON:
        raise ModelResponseError(
            f"the server's {what} is not valid JSON: {mask(_snippet(payload))!r}"
        )
    if not isinstance(data, dict):
        raise ModelReplyShapeError(
            f"the server's {what} is not a JSON object: {mask(_snippet(payload))!r}"
        )
    error = data.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        raise ModelResponseError(
            f"the server reported an error in its {what}: {mask(str(message))}"
        )
    return data


def _snippet(payload: str | bytes) -> str:
    head = payload[: _SNIPPET + 1]
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    return shorten(text, _SNIPPET)


def _reply(message: dict[str, Any], finish_reason: Any, usage: Any) -> Message:
    reply = _assistant_message(message)
    reply.response_meta = ResponseMeta(
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=_usage(usage) if isinstance(usage, dict) else None,
    )
    return _without_indexes(reply)


def _assistant_message(data: dict[str, Any]) -> Message:
    """Message from the wire shape of a reply message."""
    try:
        message = Message.from_dict({**data, "role": "assistant"})
    except (AttributeError, TypeError, ValueError) as error:
        raise ModelReplyShapeError(f"the server's reply message is malformed: {error}") from None
    if not message.reasoning_content and isinstance(data.get("reasoning"), str):
        message.reasoning_content = data["reasoning"]  # the field's name on some servers
    return message


def _without_indexes(message: Message) -> Message:
    # An index only orders the chunks of a streamed call; a whole reply has no use for it.
    for call in message.tool_calls:
        call.index = None
    return message


def _usage(data: dict[str, Any]) -> TokenUsage:
    # OpenAI nests the reasoning and cached counts; TokenUsage keeps them flat.
    completion = data.get("completion_tokens_details")
    prompt = data.get("prompt_tokens_details")
    return TokenUsage.from_dict(
        {
            **data,
            "reasoning_tokens": completion.get("reasoning_tokens") if completion else None,
            "cached_tokens": prompt.get("cached_tokens") if prompt else None,
        }
    )


class StreamAccumulator:
    """Puts one streamed reply together from the server's SSE lines, handing on each content
    delta as it arrives.

    Lines are read raw and each event decoded with json.loads: a stream may have hundreds of
    events, and the SDK's typed chunk objects would cost more than the rest of the call.
    Tool-call deltas are joined by `concat_messages`, the schema's one set of rules for
    streamed chunks (by index, else by id, arguments concatenated).

    The stream is whole once it has sent [DONE] or a finish_reason: servers that send no
    finish_reason still end with [DONE], and some end after the finish_reason without it.
    """

    def __init__(self, on_text: StreamingFunc, mask: Masker) -> None:
        self._on_text = on_text
        self._mask = mask
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[Message] = []
        self._finish_reason: str | None = None
        self._usage: TokenUsage | None = None
        self._done = False

    def feed(self, line: str) -> bool:
        """Takes one line of the SSE body; True once the stream says it is done."""
        if not line.startswith("data:"):
            return False  # blank separators, comments, `event:` and `id:` fields
        payload = line[5:].strip()
        if payload == "[DONE]":
            self._done = True
            return True
        if payload:
            self.add(_json_object(payload, "stream event", self._mask))
        return False

    def add(self, chunk: dict[str, Any]) -> None:
        """Takes one decoded `chat.completion.chunk` event."""
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta")
            if delta:
                self._add_delta(delta)
            if choice.get("finish_reason"):
                self._finish_reason = choice["finish_reason"]
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = _usage(usage)

    def _add_delta(self, delta: dict[str, Any]) -> None:
        text = delta.get("content")
        if text:  # real servers send None and "" deltas too
            self._content.append(text)
            self._on_text(text)
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str):
            self._reasoning.append(reasoning)
        calls = delta.get("tool_calls")
        if calls:
            try:
                tool_calls = [ToolCall.from_dict(call) for call in calls]
            except (AttributeError, TypeError) as error:
                raise ModelReplyShapeError(f"a streamed tool call is malformed: {error}") from None
            self._calls.append(Message("assistant", tool_calls=tool_calls))

    def message(self) -> Message:
        """The whole reply. A stream that ended with neither [DONE] nor a finish_reason was cut
        off (a proxy may end a body early without breaking the connection):
        ModelResponseError."""
        if not self._done and self._finish_reason is None:
            raise ModelResponseError(
                "the stream ended before the server sent [DONE] or a finish_reason"
            )
        reply = Message.assistant(
            "".join(self._content),
            reasoning_content="".join(self._reasoning),
            response_meta=ResponseMeta(self._finish_reason, self._usage),
        )
        if not self._calls:
            return reply
        try:
            return _without_indexes(concat_messages([reply, *self._calls]))
        except ConcatError as error:
            raise ModelReplyShapeError(f"the stream's tool calls do not add up: {error}") from None


class StreamRelay:
    """Hands one call's streamed text to `streaming_func` at most once across retries.

    When an attempt fails after text was handed over, the retry's stream usually starts with
    that same text again: it is held back until the stream gets past it, and only what is new
    is handed over. If a retried stream differs from what was handed over (sampling is not
    repeatable), nothing more of it is handed over, since the text shown so far cannot be
    taken back; the returned Message always holds the whole reply of the attempt that
    succeeded.
    """

    def __init__(self, streaming_func: StreamingFunc) -> None:
        self._func = streaming_func
        self._sent: list[str] = []
        self._shown = ""  # what was handed over before the current attempt
        self._matched = 0  # how much of it the current attempt has repeated
        self._diverged = False

    def attempt(self, mask: Masker) -> StreamAccumulator:
        """Starts an attempt; returns the accumulator it feeds its lines to."""
        self._shown = "".join(self._sent)
        self._matched = 0
        self._diverged = False
        return StreamAccumulator(self._relay, mask)

    def _relay(self, text: str) -> None:
        if self._diverged:
            return
        if self._matched < len(self._shown):
            repeated = self._shown[self._matched : self._matched + len(text)]
            if not text.startswith(repeated):
                self._diverged = True
                return
            self._matched += len(repeated)
            text = text[len(repeated) :]
            if not text:
                return
        self._sent.append(text)
        self._matched += len(text)
        self._func(text)
