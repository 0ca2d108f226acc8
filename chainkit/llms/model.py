"""The model contract, and a base class that fires the LLM callbacks once for every backend."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from chainkit._stop import stop_escaped
from chainkit.callbacks import CombiningHandler, Handler, Handlers, guard
from chainkit.llms.errors import ModelTypeError
from chainkit.schema import Message, ToolInfo

StreamingFunc = Callable[[str], None]
"""Receives each piece of a reply's text as the model produces it."""


@runtime_checkable
class Model(Protocol):
    """Anything that turns messages into a reply message.

    Options a caller may give: temperature, max_tokens, top_p, seed, model, and `callbacks`
    (a Handler, or a list of them, for llm start/end/error and retry events). A backend
    passes through what it does not know rather than dropping it.
    """

    def generate(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] | None = None,
        tools: Sequence[ToolInfo] | None = None,
        streaming_func: StreamingFunc | None = None,
        **options: Any,
    ) -> Message: ...

    async def agenerate(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] | None = None,
        tools: Sequence[ToolInfo] | None = None,
        streaming_func: StreamingFunc | None = None,
        **options: Any,
    ) -> Message: ...


@dataclass(slots=True)
class ModelRequest:
    """One call as a backend sees it: what `generate` was given, with `callbacks` guarded."""

    messages: Sequence[Message]
    stop: Sequence[str] | None = None
    tools: Sequence[ToolInfo] | None = None
    streaming_func: StreamingFunc | None = None
    callbacks: Handler | None = None
    options: dict[str, Any] = field(default_factory=dict)


class BaseModel:
    """Implements `Model` around `_generate`/`_agenerate`, firing the LLM callbacks.

    Subclasses get callbacks (start, end, error, streamed chunks) for free and keep to the
    one thing they do: talk to the model.
    """

    def generate(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] | None = None,
        tools: Sequence[ToolInfo] | None = None,
        streaming_func: StreamingFunc | None = None,
        callbacks: Handlers = None,
        **options: Any,
    ) -> Message:
        request = _request(messages, stop, tools, streaming_func, options)
        handler = _guarded(callbacks)
        if handler is None:
            return self._sync_reply(request)
        _start(handler, request)
        try:
            reply = self._sync_reply(request)
        except BaseException as error:
            handler.handle_llm_error(error)
            raise
        handler.handle_llm_end(reply)
        return reply

    async def agenerate(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] | None = None,
        tools: Sequence[ToolInfo] | None = None,
        streaming_func: StreamingFunc | None = None,
        callbacks: Handlers = None,
        **options: Any,
    ) -> Message:
        request = _request(messages, stop, tools, streaming_func, options)
        handler = _guarded(callbacks)
        if handler is None:
            return await self._agenerate(request)
        _start(handler, request)
        try:
            reply = await self._agenerate(request)
        except BaseException as error:
            handler.handle_llm_error(error)
            raise
        handler.handle_llm_end(reply)
        return reply

    def _generate(self, request: ModelRequest) -> Message:
        raise NotImplementedError(f"{type(self).__name__} must implement _generate")

    async def _agenerate(self, request: ModelRequest) -> Message:
        """Defaults to the sync path: right for models that never block."""
        return self._sync_reply(request)

    def _sync_reply(self, request: ModelRequest) -> Message:
        try:
            return self._generate(request)
        except (StopIteration, StopAsyncIteration) as error:
            # A scripted model reading its replies with next() must not end the caller's loop.
            raise stop_escaped(error, f"model {type(self).__name__}") from error


def _request(
    messages: Sequence[Message],
    stop: Sequence[str] | None,
    tools: Sequence[ToolInfo] | None,
    streaming_func: StreamingFunc | None,
    options: dict[str, Any],
) -> ModelRequest:
    if streaming_func is not None and inspect.iscoroutinefunction(streaming_func):
        raise ModelTypeError(
            "streaming_func must be a plain function: it is called once per chunk and never "
            "awaited, so an async one would lose every chunk"
        )
    return ModelRequest(messages, stop, tools, streaming_func, None, options)


def _guarded(callbacks: Handlers) -> CombiningHandler | None:
    """The handler to report to; raises TypeError, before the call, for what is no Handler."""
    if callbacks is None or isinstance(callbacks, CombiningHandler):
        return callbacks
    return guard(callbacks)


def _start(handler: CombiningHandler, request: ModelRequest) -> None:
    """Fires llm start (and, if a handler raises there, llm error, so the start is never left
    open) and routes streamed chunks and retry events to `handler` too."""
    request.callbacks = handler
    shown: dict[str, Any] = {"stop": list(request.stop) if request.stop else None}
    shown.update(request.options)
    if request.tools:
        shown["tools"] = [t.name for t in request.tools]
    try:
        handler.handle_llm_start(request.messages, shown)
    except BaseException as error:
        handler.handle_llm_error(error)
        raise
    user_func = request.streaming_func
    if user_func is not None:

        def stream(chunk: str) -> None:
            handler.handle_streaming_func(chunk)
            user_func(chunk)

        request.streaming_func = stream


def call(model: Model, prompt: str, **options: Any) -> str:
    """Sends `prompt` as one user message and returns the reply's text."""
    return model.generate([Message.user(prompt)], **options).content


async def acall(model: Model, prompt: str, **options: Any) -> str:
    """Async twin of `call`."""
    return (await model.agenerate([Message.user(prompt)], **options)).content
