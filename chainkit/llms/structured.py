"""Typed results from a model: `generate_object` and `agenerate_object`.

The output type is a dataclass, TypedDict, Enum, Literal, `list[...]`, a union, any nesting of
them, a JSON Schema dict, or a pydantic model (pydantic is never imported by chainkit: only a
model class the caller's code made is read). The strategy (see `llms.output_strategies`) is
the caller's, or the first the model lists in its `output_strategies`; a server that refuses
the strategy's field (`ModelStatusError.refuses`: a 400, 404, 422 or 500 naming it) makes the
call go on with the next one, at once, and the model's later calls start after it. A reply
that does not validate goes back to the model with what was wrong, `max_retries` times at
most; then `OutputValidationError` carries every attempt.
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypeVar, Unpack, overload

from chainkit._jsonschema.lenient import partial_object
from chainkit._jsonschema.output import Invalid, OutputShape
from chainkit._text import described, short_repr
from chainkit.callbacks.run import active_handler, tokens_wanted
from chainkit.llms.errors import (
    AllModelsFailedError,
    ModelConfigError,
    ModelRefusalError,
    ModelStatusError,
    ModelTypeError,
    OutputValidationError,
    RejectedOutput,
)
from chainkit.llms.model import Model, model_name
from chainkit.llms.options import CallOptions, StreamingFunc
from chainkit.llms.output_strategies import (
    STRATEGIES,
    STRATEGY_NAMES,
    OutputStrategy,
    StrategyName,
    output_strategies_of,
)
from chainkit.schema import Message, TokenUsage, ToolInfo

__all__ = ["ObjectResult", "PartialFunc", "agenerate_object", "generate_object"]

T = TypeVar("T")

PartialFunc = Callable[[Any], None]
"""Receives each partial value of a streamed typed result, as JSON data (dicts and lists: a
partial value is seldom a valid object of the type yet), each time it grows."""


class _Refusals:
    """The strategies each model's server refused, so that the model's later calls start
    with one it takes; kept as long as the model lives (a model that cannot be weakly
    referenced or hashed is not remembered)."""

    def __init__(self) -> None:
        self._by_model: weakref.WeakKeyDictionary[Any, frozenset[StrategyName]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def of(self, model: object) -> frozenset[StrategyName]:
        try:
            with self._lock:
                return self._by_model.get(model, frozenset())
        except TypeError:
            return frozenset()

    def add(self, model: object, name: StrategyName) -> None:
        try:
            with self._lock:
                self._by_model[model] = self._by_model.get(model, frozenset()) | {name}
        except TypeError:
            pass


_REFUSALS: Final = _Refusals()


@dataclass(frozen=True, slots=True)
class ObjectResult(Generic[T]):
    """A typed result with how it came: `value`, the reply it was read from (`raw`), the
    strategy that asked for it, and the replies before it that did not validate."""

    value: T
    raw: Message
    strategy: StrategyName
    rejected: tuple[RejectedOutput, ...] = field(default=())

    @property
    def usage(self) -> TokenUsage | None:
        """The token usage of the reply the value was read from (None if the server gave
        none)."""
        meta = self.raw.response_meta
        return None if meta is None else meta.usage


class _Partials:
    """Reads a streamed reply's partial object after each chunk and hands it on when it grew:
    to `on_partial`, and to the handlers as a `partial_object` event."""

    def __init__(
        self, shape: OutputShape, on_partial: PartialFunc | None, user: StreamingFunc | None
    ) -> None:
        self.shape = shape
        self.on_partial = on_partial
        self.user = user
        self.pieces: list[str] = []
        self.last: object = None

    def restart(self) -> None:
        self.pieces = []
        self.last = None

    def feed(self, chunk: str) -> None:
        if self.user is not None:
            self.user(chunk)
        self.pieces.append(chunk)
        data = partial_object("".join(self.pieces))
        if data is None:
            return
        value = self.shape.unwrap(data) if self.shape.wrapped else data
        if value != self.last and value != {}:
            self.last = value
            if self.on_partial is not None:
                self.on_partial(value)
            handler = active_handler()
            if handler is not None:
                handler.handle_partial_object(value)


def _checked_retries(max_retries: object) -> int:
    if isinstance(max_retries, bool) or not isinstance(max_retries, int):
        raise ModelTypeError(f"max_retries must be a whole number, got {described(max_retries)}")
    if max_retries < 0:
        raise ModelConfigError(f"max_retries must be 0 or more, got {max_retries}")
    return max_retries


def _strategy_choices(model: Model, strategy: object) -> tuple[StrategyName, ...]:
    """The strategies to try in turn: the model's, less those its server refused before (the
    last is kept), or the caller's one, which a model that lists its own must list."""
    listed = output_strategies_of(model)
    if strategy is None:
        refused = _REFUSALS.of(model)
        taken = tuple(name for name in listed if name not in refused)
        return taken or listed[-1:]
    for name in STRATEGY_NAMES:
        if strategy == name:
            if name not in listed and hasattr(model, "output_strategies"):
                raise ModelConfigError(
                    f"strategy={name!r}: {model_name(model)} takes {', '.join(listed)} (its "
                    "output_strategies)"
                )
            return (name,)
    raise ModelConfigError(
        f"strategy must be one of {', '.join(STRATEGY_NAMES)} (or None to choose), got {strategy!r}"
    )


def _checked_prompt(prompt: object) -> list[Message]:
    if isinstance(prompt, str):
        return [Message.user(prompt)]
    if isinstance(prompt, Sequence) and all(isinstance(m, Message) for m in prompt):
        return list(prompt)
    raise ModelTypeError(
        "prompt must be the text of one user message (str) or a list of Messages, got "
        f"{described(prompt)}"
    )


_STRATEGY_OPTIONS: Final = ("response_format", "tool_choice")
"""Call options a strategy sets: a caller's would be overridden or contradicted."""


def _checked_options(options: dict[str, Any]) -> dict[str, Any]:
    given = [name for name in _STRATEGY_OPTIONS if options.get(name) is not None]
    if given:
        raise ModelConfigError(
            f"generate_object sets {' and '.join(given)} itself, as its strategy asks for the "
            "schema: leave it out (strategy= chooses how the schema is sent)"
        )
    return options


def _checked_on_partial(on_partial: object) -> PartialFunc | None:
    if on_partial is None:
        return None
    if not callable(on_partial) or inspect.iscoroutinefunction(on_partial):
        raise ModelTypeError(
            "on_partial must be a plain function of the partial value (it is called, never "
            f"awaited), got {described(on_partial)}"
        )
    return on_partial


def _shape(output_type: object) -> OutputShape:
    try:
        return OutputShape(output_type)
    except TypeError as error:
        raise ModelTypeError(
            f"output_type {short_repr(output_type, 200)} has no JSON schema: {error}"
        ) from None


class _Session:
    """One typed-result call: what each attempt sends, and what its reply means. No I/O: the
    sync and async drivers send the requests."""

    def __init__(
        self,
        model: Model,
        prompt: str | Sequence[Message],
        output_type: object,
        strategy: object,
        max_retries: object,
        on_partial: PartialFunc | None,
        options: dict[str, Any],
    ) -> None:
        self.max_retries = _checked_retries(max_retries)
        self.model = model
        self.choices = _strategy_choices(model, strategy)
        self.chosen = strategy is not None
        self.strategy: OutputStrategy = STRATEGIES[self.choices[0]]
        self.shape = _shape(output_type)
        self.messages = _checked_prompt(prompt)
        on_partial = _checked_on_partial(on_partial)
        self.options = _checked_options(options)
        self.rejected: list[RejectedOutput] = []
        self.partials: _Partials | None = None
        if on_partial is not None or tokens_wanted():
            self.partials = _Partials(self.shape, on_partial, options.get("streaming_func"))

    def request(self) -> tuple[list[Message], list[ToolInfo] | None, dict[str, Any]]:
        strategy, shape = self.strategy, self.shape
        options = {**self.options, **strategy.options(shape)}
        if self.partials is not None:
            self.partials.restart()
            options["streaming_func"] = self.partials.feed
        return strategy.messages(self.messages, shape), strategy.tools(shape), options

    def downgrade(self, error: ModelStatusError | AllModelsFailedError) -> bool:
        """Moves on to the next strategy when the server refused one of this one's fields
        (every server, for a `Fallbacks` told to fall back on refusals), and remembers the
        refusal for the model's later calls; False when it did not (or the caller chose the
        strategy)."""
        refused = _refuses(error, self.strategy.fields)
        position = self.choices.index(self.strategy.name)
        if self.chosen or not refused or position + 1 >= len(self.choices):
            return False
        _REFUSALS.add(self.model, self.strategy.name)
        self.strategy = STRATEGIES[self.choices[position + 1]]
        return True

    def take(self, reply: Message) -> ObjectResult[Any] | None:
        """The result `reply` gives; None when it did not validate and the model is to try
        again; OutputValidationError when no tries are left."""
        refusal = (reply.extra or {}).get("refusal")
        if isinstance(refusal, str) and refusal:
            raise ModelRefusalError(refusal, reply)
        text = self.strategy.reply_text(reply, self.shape)
        value = self.shape.read_text(text)
        if not isinstance(value, Invalid):
            return ObjectResult(value, reply, self.strategy.name, tuple(self.rejected))
        problems = tuple(str(problem) for problem in value.problems)
        self.rejected.append(RejectedOutput(text, problems, self.strategy.name))
        if len(self.rejected) > self.max_retries:
            raise OutputValidationError(self.shape.name, self.rejected)
        self.messages += self.strategy.rejection(reply, str(value))
        return None


def _refuses(error: Exception, fields: Sequence[str]) -> bool:
    if isinstance(error, AllModelsFailedError):
        return all(_refuses(each, fields) for _, each in error.errors)
    return isinstance(error, ModelStatusError) and any(error.refuses(f) for f in fields)


@overload
def generate_object(
    llm: Model,
    prompt: str | Sequence[Message],
    output_type: type[T],
    /,
    *,
    strategy: StrategyName | None = None,
    max_retries: int = 2,
    include_raw: Literal[False] = False,
    on_partial: PartialFunc | None = None,
    **options: Unpack[CallOptions],
) -> T: ...
@overload
def generate_object(
    llm: Model,
    prompt: str | Sequence[Message],
    output_type: type[T],
    /,
    *,
    strategy: StrategyName | None = None,
    max_retries: int = 2,
    include_raw: Literal[True],
    on_partial: PartialFunc | None = None,
    **options: Unpack[CallOptions],
) -> ObjectResult[T]: ...
@overload
def generate_object(
    llm: Model,
    prompt: str | Sequence[Message],
    output_type: object,
    /,
    *,
    strategy: StrategyName | None = None,
    max_retries: int = 2,
    include_raw: bool = False,
    on_partial: PartialFunc | None = None,
    **options: Unpack[CallOptions],
) -> Any: ...
def generate_object(
    llm: Model,
    prompt: str | Sequence[Message],
    output_type: object,
    /,
    *,
    strategy: StrategyName | None = None,
    max_retries: int = 2,
    include_raw: bool = False,
    on_partial: PartialFunc | None = None,
    **options: Unpack[CallOptions],
) -> Any:
    """Asks `llm` for a value of `output_type` and returns it, validated (with
    `include_raw=True`, an `ObjectResult` holding it, the reply and its usage).

    `prompt` is one user message's text or the messages. `strategy` overrides the model's
    first choice; a reply that does not validate is sent back with its problems up to
    `max_retries` times, then `OutputValidationError` carries every attempt. A refusal raises
    `ModelRefusalError`. `on_partial` (a `PartialFunc`) streams the reply and hears each
    partial value as it grows; the other options are the model's call options.
    """
    session = _Session(llm, prompt, output_type, strategy, max_retries, on_partial, dict(options))
    while True:
        messages, tools, call_options = session.request()
        try:
            reply = llm.generate(messages, tools=tools, **call_options)
        except (ModelStatusError, AllModelsFailedError) as error:
            if session.downgrade(error):
                continue
            raise
        result = session.take(reply)
        if result is not None:
            return result if include_raw else result.value


@overload
async def agenerate_object(
    llm: Model,
    prompt: str | Sequence[Message],
    output_type: type[T],
    /,
    *,
    strategy: StrategyName | None = None,
    max_retries: int = 2,
    include_raw: Literal[False] = False,
    on_partial: PartialFunc | None = None,
    **options: Unpack[CallOptions],
) -> T: ...
@overload
async def agenerate_object(
    llm: Model,
    prompt: str | Sequence[Message],
    output_type: type[T],
    /,
    *,
    strategy: StrategyName | None = None,
    max_retries: int = 2,
    include_raw: Literal[True],
    on_partial: PartialFunc | None = None,
    **options: Unpack[CallOptions],
) -> ObjectResult[T]: ...
@overload
async def agenerate_object(
    llm: Model,
    prompt: str | Sequence[Message],
    output_type: object,
    /,
    *,
    strategy: StrategyName | None = None,
    max_retries: int = 2,
    include_raw: bool = False,
    on_partial: PartialFunc | None = None,
    **options: Unpack[CallOptions],
) -> Any: ...
async def agenerate_object(
    llm: Model,
    prompt: str | Sequence[Message],
    output_type: object,
    /,
    *,
    strategy: StrategyName | None = None,
    max_retries: int = 2,
    include_raw: bool = False,
    on_partial: PartialFunc | None = None,
    **options: Unpack[CallOptions],
) -> Any:
    """Async twin of `generate_object`."""
    session = _Session(llm, prompt, output_type, strategy, max_retries, on_partial, dict(options))
    while True:
        messages, tools, call_options = session.request()
        try:
            reply = await llm.agenerate(messages, tools=tools, **call_options)
        except (ModelStatusError, AllModelsFailedError) as error:
            if session.downgrade(error):
                continue
            raise
        result = session.take(reply)
        if result is not None:
            return result if include_raw else result.value
