"""The model contract, and a base class that makes each call a run and fires its callbacks
once for every backend."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeGuard, Unpack, runtime_checkable

from chainkit._elsewhere import Elsewhere
from chainkit._errors import EscapedStopError
from chainkit._pipe import Pipeable
from chainkit._stop import stop_escaped
from chainkit._text import described, shorten
from chainkit.callbacks import Handler
from chainkit.callbacks.combining import CombiningHandler, guard
from chainkit.callbacks.handler import ModelOptions
from chainkit.callbacks.run import enter, tokens_wanted
from chainkit.llms import _cached_call
from chainkit.llms import cache as response_cache
from chainkit.llms._cache_key import cache_key, effective_options
from chainkit.llms.cache import ResponseCache, checked_cache
from chainkit.llms.errors import ModelAttributeError, ModelTypeError
from chainkit.llms.options import CallOptions, StreamingFunc, check_options, check_stop
from chainkit.schema import Message, ToolInfo

__all__ = ["BaseModel", "Model", "ModelRequest", "acall", "call"]


@runtime_checkable
class Model(Protocol):
    """Anything that turns messages into a reply message.

    `options` are the typed `CallOptions` (`callbacks` among them hears this call); `tools` are
    offered to a model that calls tools natively.
    """

    def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Unpack[CallOptions],
    ) -> Message: ...

    async def agenerate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Unpack[CallOptions],
    ) -> Message: ...


@dataclass(slots=True)
class ModelRequest:
    """One call as a backend sees it: what `generate` was given, with `callbacks` the handler
    of the call's run (for retry events).

    `streaming_func` is what a backend hands each chunk to: the caller's own function
    (`caller_streaming_func`) made to report the chunk to the callbacks too. A backend that
    retries a stream reports every attempt's chunks but hands the caller's function each
    piece of text once (see `llms.openai._stream.StreamRelay`)."""

    messages: Sequence[Message]
    stop: Sequence[str] | None = None
    tools: Sequence[ToolInfo] | None = None
    streaming_func: StreamingFunc | None = None
    callbacks: Handler | None = None
    options: dict[str, Any] = field(default_factory=dict)
    caller_streaming_func: StreamingFunc | None = None


class BaseModel(Pipeable):
    """Implements `Model` around `_generate`/`_agenerate`: each call is an "llm" run, whose
    callbacks (start, end, error, streamed chunks) fire here for every backend, so backends
    keep to the one thing they do: talk to the model."""

    if not TYPE_CHECKING:  # to mypy they stay missing, so it flags them in user code
        invoke = Elsewhere(
            "use llms.call(llm, prompt) for the reply's text, or llm.generate(messages) for "
            "the reply Message",
            ModelAttributeError,
        )
        ainvoke = Elsewhere(
            "use await llms.acall(llm, prompt), or await llm.agenerate(messages)",
            ModelAttributeError,
        )
        predict = Elsewhere("use llms.call(llm, prompt)", ModelAttributeError)
        apredict = Elsewhere("use await llms.acall(llm, prompt)", ModelAttributeError)
        stream = Elsewhere(
            "use llms.call(llm, prompt, streaming_func=print_chunk), which calls "
            "print_chunk(text) with each chunk",
            ModelAttributeError,
        )
        bind_tools = Elsewhere(
            "use llm.generate(messages, tools=[tool.info() for tool in tools]), or "
            "agents.ToolCallingAgent(llm, tools)",
            ModelAttributeError,
        )
        with_fallbacks = Elsewhere(
            "use llms.Fallbacks([llm, backup, ...]), a model that calls the next when one fails",
            ModelAttributeError,
        )

    @property
    def name(self) -> str:
        """The model's name in runs and traces."""
        return type(self).__name__

    @property
    def provider(self) -> str:
        """Who serves the model, as traces name it (OpenTelemetry's gen_ai.provider.name)."""
        return type(self).__name__.lower()

    @property
    def server_url(self) -> str | None:
        """Where the model is served, as traces show it (OpenTelemetry's server.address and
        server.port): a URL without credentials; None for a model in this process."""
        return None

    default_options: Mapping[str, Any] = MappingProxyType({})
    """The options every call takes unless it gives its own: none here; a backend's
    constructor takes them (`llms.OpenAI("gpt-4o-mini", temperature=0)`)."""

    _cache: ResponseCache | Literal[False] | None = None

    @property
    def cache(self) -> ResponseCache | Literal[False] | None:
        """The response cache this model's calls go through (see `llms.cache`): None for the
        one `llms.set_cache` set, if any; False for none at all."""
        return self._cache

    @cache.setter
    def cache(self, value: ResponseCache | Literal[False] | None) -> None:
        self._cache = value if value is None or value is False else checked_cache(value, "cache")

    def _cache_key(self, request: ModelRequest) -> tuple[ResponseCache, str] | None:
        """The cache a call goes through, and its key there; None when it goes through none:
        no cache, or a reply sampled at a temperature above 0 (or none given: most servers'
        default is 1) which the cache does not keep."""
        chosen = self._cache
        if chosen is None:
            chosen = response_cache.default_cache()
        if chosen is None or chosen is False:
            return None
        options = effective_options(self.default_options, request.options, request.stop)
        if options.get("temperature") != 0 and not chosen.cache_sampled:
            return None
        return chosen, cache_key(self, request.messages, request.tools, options)

    def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Unpack[CallOptions],
    ) -> Message:
        request, own = _request(messages, tools, options)
        # One test when no cache is set anywhere, as on most calls.
        cached = (
            None
            if self._cache is None and response_cache.default_cache() is None
            else self._cache_key(request)
        )
        with enter("llm", request.options.get("model") or self.name, own) as run:
            if cached is not None:
                answer = partial(self._sync_reply, request)
                return _cached_call.generate(*cached, run, request, self._starter(request), answer)
            if run.handler is not None:
                _start(run.handler, request, self)
            # The backend is called here, not through _sync_reply: one call less per model
            # call, on the agent loop's path.
            try:
                reply = self._generate(request)
            except (StopIteration, StopAsyncIteration) as error:
                raise self._stop_escaped(error) from error
            if run.handler is not None:  # else no one hears the end: no call to make
                run.end(reply)
            return reply

    async def agenerate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Unpack[CallOptions],
    ) -> Message:
        request, own = _request(messages, tools, options)
        # One test when no cache is set anywhere, as on most calls.
        cached = (
            None
            if self._cache is None and response_cache.default_cache() is None
            else self._cache_key(request)
        )
        with enter("llm", request.options.get("model") or self.name, own) as run:
            if cached is not None:
                areply = partial(self._areply, request)
                start = self._starter(request)
                return await _cached_call.agenerate(*cached, run, request, start, areply)
            if run.handler is not None:
                _start(run.handler, request, self)
            if type(self)._agenerate is BaseModel._agenerate:
                # No async path of its own: the sync reply _agenerate would give, without a
                # coroutine made and awaited around it on every call.
                reply = self._sync_reply(request)
            else:
                reply = await self._agenerate(request)
            if run.handler is not None:
                run.end(reply)
            return reply

    def _starter(self, request: ModelRequest) -> _cached_call.Start:
        return lambda handler: _start(handler, request, self)

    async def _areply(self, request: ModelRequest) -> Message:
        if type(self)._agenerate is BaseModel._agenerate:
            return self._sync_reply(request)
        return await self._agenerate(request)

    def _generate(self, request: ModelRequest) -> Message:
        raise NotImplementedError(f"{type(self).__name__} must implement _generate")

    async def _agenerate(self, request: ModelRequest) -> Message:
        """Defaults to the sync path: right for models that never block."""
        return self._sync_reply(request)

    def _sync_reply(self, request: ModelRequest) -> Message:
        try:
            return self._generate(request)
        except (StopIteration, StopAsyncIteration) as error:
            raise self._stop_escaped(error) from error

    def _stop_escaped(self, error: StopIteration | StopAsyncIteration) -> EscapedStopError:
        """The error for a StopIteration out of `_generate`: a scripted model reading its
        replies with next() must not end the caller's loop."""
        return stop_escaped(error, f"model {type(self).__name__}")


def _request(
    messages: Sequence[Message], tools: Sequence[ToolInfo] | None, given: CallOptions
) -> tuple[ModelRequest, CombiningHandler | None]:
    """The request, and the guarded handler of the call's own `callbacks` option; raises,
    before the call, for messages that are no list of Message, tools that are no ToolInfo,
    an unknown option or callbacks that are no Handler."""
    check_messages(messages)
    if tools is not None:
        _check_tools(tools)
    options: dict[str, Any] = given  # type: ignore[assignment]  # the call's own **options
    stop = options.pop("stop", None)
    if options:  # an agent's call gives its stop words alone: no more to check
        check_options(options)
    if stop is not None:
        check_stop("stop", stop)
    streaming_func, own = _taken(options) if options else (None, None)
    return ModelRequest(messages, stop, tools, streaming_func, None, options, streaming_func), own


def check_messages(messages: object, where: str = "generate") -> None:
    """Raises ModelTypeError, before any call, unless `messages` is a list (or another
    sequence) of Message; the error says how to write what was given instead (a text, a
    lone Message, a `(role, content)` pair, dicts), which a model would otherwise read
    character by character, or fail on deep inside."""
    items = messages if type(messages) is list else _sequence(messages, where)
    for index, message in enumerate(items):
        if not isinstance(message, Message):
            raise ModelTypeError(
                f"{where} takes a list of schema.Message; messages[{index}] is "
                f"{described(message)}: {_message_advice(message)}"
            )


def _sequence(messages: object, where: str) -> Sequence[object]:
    """`messages`, which is no list; ModelTypeError unless it is a sequence that could hold
    messages."""
    wanted = f"{where} takes a list of messages"
    if isinstance(messages, str):
        raise ModelTypeError(
            f"{wanted}, got a str: write {where}([Message.user({shorten(messages, 40)!r})]), "
            "or use llms.call(llm, text) for the reply's text"
        )
    if isinstance(messages, Message):
        raise ModelTypeError(f"{wanted}, got one Message: write {where}([message])")
    if _is_pair(messages):
        raise ModelTypeError(
            f"{wanted}, got one (role, content) pair {shorten(repr(messages), 60)}: "
            f"{_message_advice(messages)}, in a list"
        )
    if isinstance(messages, bytes | Mapping) or not isinstance(messages, Sequence):
        raise ModelTypeError(f"{wanted} (schema.Message), got {described(messages)}")
    return messages


def _is_pair(item: object) -> TypeGuard[Sequence[Any]]:
    """Whether `item` is a (role, content) pair, as LangChain and OpenAI users write one."""
    return isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)


_MAKERS = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
}
"""The Message constructor for each role name a pair may use (LangChain's "human"/"ai" too)."""


def _message_advice(item: object) -> str:
    """How to write `item`, a message in another library's shape, as a Message."""
    if _is_pair(item):
        role, content = item
        maker = _MAKERS.get(role)
        if maker is None:
            return "write Message.user(text), Message.assistant(text) or Message.system(text)"
        return f"write Message.{maker}({shorten(repr(content), 40)})"
    if isinstance(item, Mapping):
        return "write Message.from_dict(data) for an OpenAI-style dict"
    if isinstance(item, str):
        return "a text has no role: write Message.user(text)"
    return "make each a Message (Message.user(text), Message.assistant(text), ...)"


def _check_tools(tools: object) -> None:
    """Raises ModelTypeError unless `tools` is a list of ToolInfo, naming the first that is
    not (a Tool is offered by its `info()`)."""
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise ModelTypeError(f"tools must be a list of ToolInfo, got {described(tools)}")
    for index, tool in enumerate(tools):
        if not isinstance(tool, ToolInfo):
            advice = "offer a tool by its tool.info()" if hasattr(tool, "info") else ""
            raise ModelTypeError(
                f"tools[{index}] is {described(tool)}, not a ToolInfo"
                + (f": {advice}" if advice else "")
            )


def _taken(options: dict[str, Any]) -> tuple[StreamingFunc | None, CombiningHandler | None]:
    """The call's `streaming_func` and the guarded handler of its `callbacks`, taken out of its
    checked `options`; raises for callbacks that are no Handler and an async streaming_func."""
    streaming_func = options.pop("streaming_func", None)
    callbacks = options.pop("callbacks", None)
    own = None if callbacks is None else guard(callbacks)
    if streaming_func is not None:
        check_streaming_func(streaming_func)
    return streaming_func, own


def model_name(model: object) -> str:
    """How errors and runs name `model`: its `name`, else its class's."""
    return str(getattr(model, "name", None) or type(model).__name__)


def check_streaming_func(streaming_func: object) -> None:
    """Raises for an async `streaming_func`."""
    if inspect.iscoroutinefunction(streaming_func):
        raise ModelTypeError(
            "streaming_func must be a plain function: it is called once per chunk and never "
            "awaited, so an async one would lose every chunk"
        )


def _start(handler: CombiningHandler, request: ModelRequest, model: BaseModel) -> None:
    """Fires llm start, with the options in effect (the model's defaults under the call's
    own), and routes streamed chunks and retry events to `handler` too; streams to `handler`
    alone when no streaming_func was given but the context wants tokens."""
    request.callbacks = handler
    defaults = model.default_options
    stop = request.stop or defaults.get("stop")
    shown = ModelOptions(model.provider, defaults, model.server_url)
    shown["stop"] = list(stop) if stop else None
    if defaults:
        # A call's option set to None leaves the default in place, as the backends read it.
        given = request.options.items()
        shown.update((k, v) for k, v in given if v is not None or k not in defaults)
    else:
        shown.update(request.options)
    if request.tools:
        shown["tools"] = [t.name for t in request.tools]
    handler.handle_llm_start(request.messages, shown)
    user_func = request.streaming_func
    if user_func is not None:

        def stream(chunk: str) -> None:
            handler.handle_streaming_func(chunk)
            user_func(chunk)

        request.streaming_func = stream
    elif tokens_wanted():
        request.streaming_func = handler.handle_streaming_func


def call(llm: Model, prompt: str, /, **options: Unpack[CallOptions]) -> str:
    """Sends `prompt` as one user message to `llm` and returns the reply's text."""
    return llm.generate([Message.user(prompt)], **options).content


async def acall(llm: Model, prompt: str, /, **options: Unpack[CallOptions]) -> str:
    """Async twin of `call`."""
    return (await llm.agenerate([Message.user(prompt)], **options)).content
