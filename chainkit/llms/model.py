"""The model contract, and a base class that fires the LLM callbacks once for every backend."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from chainkit.callbacks import CombiningHandler, Handler, guard
from chainkit.schema import Message, ToolInfo

StreamingFunc = Callable[[str], None]
"""Receives each piece of a reply's text as the model produces it."""


@runtime_checkable
class Model(Protocol):
    """Anything that turns messages into a reply message.

    Options a caller may give: temperature, max_tokens, top_p, seed, model, and `callbacks`
    (a Handler for llm start/end/error and retry events). A backend passes through what it
    does not know rather than dropping it.
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
        callbacks: Handler | None = None,
        **options: Any,
    ) -> Message:
        if callbacks is None:
            return self._generate(messages, stop, tools, streaming_func, None, options)
        handler, streaming_func = _start(callbacks, messages, stop, tools, streaming_func, options)
        try:
            reply = self._generate(messages, stop, tools, streaming_func, handler, options)
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
        callbacks: Handler | None = None,
        **options: Any,
    ) -> Message:
        if callbacks is None:
            return await self._agenerate(messages, stop, tools, streaming_func, None, options)
        handler, streaming_func = _start(callbacks, messages, stop, tools, streaming_func, options)
        try:
            reply = await self._agenerate(messages, stop, tools, streaming_func, handler, options)
        except BaseException as error:
            handler.handle_llm_error(error)
            raise
        handler.handle_llm_end(reply)
        return reply

    def _generate(
        self,
        messages: Sequence[Message],
        stop: Sequence[str] | None,
        tools: Sequence[ToolInfo] | None,
        streaming_func: StreamingFunc | None,
        callbacks: Handler | None,
        options: dict[str, Any],
    ) -> Message:
        raise NotImplementedError(f"{type(self).__name__} must implement _generate")

    async def _agenerate(
        self,
        messages: Sequence[Message],
        stop: Sequence[str] | None,
        tools: Sequence[ToolInfo] | None,
        streaming_func: StreamingFunc | None,
        callbacks: Handler | None,
        options: dict[str, Any],
    ) -> Message:
        """Defaults to the sync path: right for models that never block."""
        return self._generate(messages, stop, tools, streaming_func, callbacks, options)


def _start(
    callbacks: Handler,
    messages: Sequence[Message],
    stop: Sequence[str] | None,
    tools: Sequence[ToolInfo] | None,
    streaming_func: StreamingFunc | None,
    options: dict[str, Any],
) -> tuple[Handler, StreamingFunc | None]:
    handler = callbacks if isinstance(callbacks, CombiningHandler) else guard(callbacks)
    assert handler is not None
    shown: dict[str, Any] = {"stop": list(stop) if stop else None, **options}
    if tools:
        shown["tools"] = [t.name for t in tools]
    handler.handle_llm_start(messages, shown)
    if streaming_func is None:
        return handler, None
    user_func = streaming_func

    def stream(chunk: str) -> None:
        handler.handle_streaming_func(chunk)
        user_func(chunk)

    return handler, stream


def call(model: Model, prompt: str, **options: Any) -> str:
    """Sends `prompt` as one user message and returns the reply's text."""
    return model.generate([Message.user(prompt)], **options).content


async def acall(model: Model, prompt: str, **options: Any) -> str:
    """Async twin of `call`."""
    return (await model.agenerate([Message.user(prompt)], **options)).content
