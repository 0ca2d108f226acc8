"""Typed results from a model: `generate_object` and `agenerate_object`.

The output type is a dataclass, TypedDict, Enum, Literal, `list[...]`, a union, any nesting of
them, a JSON Schema dict, or a pydantic model (pydantic is never imported by chainkit: only a
model class the caller's code made is read). The strategy (see `llms.output_strategies`) is
the caller's, or the first the model lists in its `output_strategies`; a server that refuses
the strategy's field (`ModelStatusError.refuses`: a 400, 404, 422 or 500 naming it) makes the
call go on with the next one, at once, and the model's later calls start after it. A reply
that does not validate goes back to the model with what was wrong, `max_retries` times at
most; then `OutputValidationError` carries every attempt.

`generate_parsed` asks the same way for a reply that a parse function (an output parser's)
reads, sending back the parser's error instead of validation problems: one loop for both.
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, Protocol, TypeVar, Unpack, overload

from chainkit._jsonschema.lenient import ObjectStream
from chainkit._jsonschema.output import WRAPPER_KEY, Invalid, OutputShape
from chainkit._jsonschema.partial import PartialBuilder
from chainkit._jsonschema.specs import INVALID, compile_type
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
    reading_rejection,
)
from chainkit.schema import Message, TokenUsage, ToolInfo

__all__ = [
    "ObjectResult",
    "PartialFunc",
    "agenerate_object",
    "agenerate_parsed",
    "generate_object",
    "generate_parsed",
]

T = TypeVar("T")

PartialFunc = Callable[[Any], None]
"""Receives each partial value of a streamed typed result, as JSON data (dicts and lists: a
partial value is seldom a valid object of the type yet), each time it grows; with
`typed_partials=True`, built into the type (fields not there yet are None)."""
ItemFunc = Callable[[Any], None]
"""Receives each item of a streamed `list[T]` result, read into T, as soon as it is whole."""

_COPIES_PER_CHAR: Final = 8
"""How many members of open objects a partial value may copy per character read since the
last one."""
_BUILT_PER_CHAR: Final = 4
"""How many values a typed partial (built anew each time) may hold per character read since
the last one: building a value costs about as much as reading a few characters."""


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


@dataclass(frozen=True, slots=True)
class _Streamed:
    """Who hears a streamed reply: the caller's `on_partial` (and whether as typed values),
    `on_item` and `streaming_func`."""

    on_partial: PartialFunc | None
    typed_partials: bool
    on_item: ItemFunc | None
    streaming_func: StreamingFunc | None

    @property
    def wanted(self) -> bool:
        return self.on_partial is not None or self.on_item is not None or tokens_wanted()


class _Partials:
    """Reads a streamed reply's object as it arrives (each character once) and hands on what
    it holds: its partial value when it grew (to `on_partial`, as JSON data or built into the
    type, and to the handlers as a `partial_object` event), and each item of a list result
    once it is whole and reads as the item type (to `on_item`).

    A partial value shares its finished members with the one before and copies only the
    objects and arrays still open (built into the type, it is made anew); so that a long
    list does not cost a copy per chunk, the next one is made once the text since the last
    pays for it (`_COPIES_PER_CHAR`, `_BUILT_PER_CHAR`). The whole stream then costs time
    linear in the reply, and the last partial is the whole value (`finish`)."""

    def __init__(self, shape: OutputShape, streamed: _Streamed) -> None:
        self.shape = shape
        self.on_partial = streamed.on_partial
        self.builder = PartialBuilder(shape.output_type) if streamed.typed_partials else None
        self.user = streamed.streaming_func
        self.on_item = streamed.on_item
        self.item_spec = None if self.on_item is None else compile_type(shape.item_type)
        self.handed = 0  # items handed on, across attempts: each is handed on once
        self.restart()

    def restart(self) -> None:
        self.stream = ObjectStream()
        self.unshown = 0  # characters read since the last partial was made
        self.last: object = None
        self.last_shown: object = None
        self.seen = 0  # items of this attempt looked at
        self.blocked = False  # an item did not read: none after it is handed on

    def feed(self, chunk: str) -> None:
        if self.user is not None:
            self.user(chunk)
        self.stream.feed(chunk)
        self.unshown += len(chunk)
        if self.on_item is not None:
            self.hand_on_items(self.on_item)
        if self.builder is None:
            due = self.unshown * _COPIES_PER_CHAR >= self.stream.copy_cost
        else:
            due = self.unshown * _BUILT_PER_CHAR >= self.stream.values_read
        if due:
            self.hand_on()

    def finish(self, text: str) -> None:
        """Ends the reply: hands on what was held back; a reply that streamed no text (the
        tool strategy's arguments arrive whole) is read as one piece."""
        if self.stream.chars_read == 0 and self.unshown == 0 and text:
            self.stream.feed(text)
            self.unshown = len(text)
            if self.on_item is not None:
                self.hand_on_items(self.on_item)
        if self.unshown:
            self.hand_on()

    def hand_on(self) -> None:
        self.unshown = 0
        data = self.stream.partial()
        if data is None:
            return
        value = self.shape.unwrap(data) if self.shape.wrapped else data
        if value == self.last or value == {}:
            return
        self.last = value
        if self.on_partial is not None:
            self.tell(self.on_partial, value)
        handler = active_handler()
        if handler is not None:
            handler.handle_partial_object(value)

    def tell(self, on_partial: PartialFunc, value: object) -> None:
        if self.builder is None:
            on_partial(value)
            return
        shown = self.builder.build(value)
        # Two partial values may build alike: a string cut short for an enum is None.
        if shown != self.last_shown:
            self.last_shown = shown
            on_partial(shown)

    def hand_on_items(self, on_item: ItemFunc) -> None:
        assert self.item_spec is not None
        items = self.stream.finished_items(WRAPPER_KEY)
        while self.seen < len(items) and not self.blocked:
            if self.seen >= self.handed:
                item = self.item_spec.coerce(items[self.seen], "", [])
                if item is INVALID:
                    self.blocked = True
                    return
                on_item(item)
                self.handed += 1
            self.seen += 1


def _check_streamed(streamed: _Streamed, shape: OutputShape) -> None:
    _check_listener("on_partial", "the partial value", streamed.on_partial)
    _check_listener("on_item", "each item", streamed.on_item)
    if not isinstance(streamed.typed_partials, bool):
        raise ModelTypeError(
            f"typed_partials must be True or False, got {described(streamed.typed_partials)}"
        )
    if streamed.on_item is not None and shape.item_type is None:
        raise ModelTypeError(
            f"on_item hears the items of a list: output_type must be list[...], got "
            f"{shape.output_type!r}"
        )


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


def _check_listener(name: str, heard: str, listener: object) -> None:
    if listener is not None and (not callable(listener) or inspect.iscoroutinefunction(listener)):
        raise ModelTypeError(
            f"{name} must be a plain function of {heard} (it is called, never awaited), got"
            f" {described(listener)}"
        )


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
        streamed: _Streamed,
        options: dict[str, Any],
    ) -> None:
        self.max_retries = _checked_retries(max_retries)
        self.model = model
        self.choices = _strategy_choices(model, strategy)
        self.chosen = strategy is not None
        self.strategy: OutputStrategy = STRATEGIES[self.choices[0]]
        self.shape = _shape(output_type)
        self.messages = _checked_prompt(prompt)
        self.options = _checked_options(options)
        self.rejected: list[RejectedOutput] = []
        _check_streamed(streamed, self.shape)
        self.partials = _Partials(self.shape, streamed) if streamed.wanted else None

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
        _check_refusal(reply)
        text = self.strategy.reply_text(reply, self.shape)
        if self.partials is not None:
            self.partials.finish(text)
        value = self.shape.read_text(text)
        if not isinstance(value, Invalid):
            return ObjectResult(value, reply, self.strategy.name, tuple(self.rejected))
        problems = tuple(str(problem) for problem in value.problems)
        _reject(self, RejectedOutput(text, problems, self.strategy.name), self.shape.name)
        self.messages += self.strategy.rejection(reply, str(value))
        return None


class _ParsedSession:
    """One call whose reply is read by a parse function (`generate_parsed`): no strategy, the
    reply's text as it is, and a reply that does not read sent back with the error."""

    def __init__(
        self,
        prompt: str | Sequence[Message],
        read: Callable[[str], Any],
        name: str,
        max_retries: object,
        streaming: Callable[[], StreamingFunc] | None,
        options: dict[str, Any],
    ) -> None:
        self.max_retries = _checked_retries(max_retries)
        if not callable(read) or inspect.iscoroutinefunction(read):
            raise ModelTypeError(
                f"read must be a plain function of the reply's text, got {described(read)}"
            )
        if not isinstance(name, str) or not name:
            raise ModelTypeError(f"name must be a non-empty str, got {described(name)}")
        _check_listener("streaming", "nothing, making each attempt's streaming_func", streaming)
        self.read = read
        self.name = name
        self.streaming = streaming
        self.messages = _checked_prompt(prompt)
        self.options = options
        self.rejected: list[RejectedOutput] = []

    def request(self) -> tuple[list[Message], list[ToolInfo] | None, dict[str, Any]]:
        if self.streaming is None:
            return self.messages, None, self.options
        attempt = self.streaming()
        caller: StreamingFunc | None = self.options.get("streaming_func")

        def both(chunk: str) -> None:
            if caller is not None:
                caller(chunk)
            attempt(chunk)

        return self.messages, None, {**self.options, "streaming_func": both}

    def downgrade(self, error: ModelStatusError | AllModelsFailedError) -> bool:
        return False

    def take(self, reply: Message) -> tuple[Any, Message] | None:
        """The value `reply` reads as, with it; None when it did not read and the model is to
        try again; OutputValidationError when no tries are left."""
        _check_refusal(reply)
        try:
            return self.read(reply.content), reply
        except ValueError as error:
            problem = str(error)
        _reject(self, RejectedOutput(reply.content, (problem,), PARSED), self.name)
        self.messages += reading_rejection(reply, problem)
        return None


PARSED: Final = "parsed"
"""The `strategy` of a `RejectedOutput` of `generate_parsed`: a reply read by a parser."""


class _Rejecting(Protocol):
    max_retries: int
    rejected: list[RejectedOutput]


def _reject(session: _Rejecting, rejected: RejectedOutput, name: str) -> None:
    """Keeps a reply that gave no value; OutputValidationError, with every attempt, when it
    was the last try."""
    session.rejected.append(rejected)
    if len(session.rejected) > session.max_retries:
        raise OutputValidationError(name, session.rejected)


def _check_refusal(reply: Message) -> None:
    refusal = (reply.extra or {}).get("refusal")
    if isinstance(refusal, str) and refusal:
        raise ModelRefusalError(refusal, reply)


R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class _Asking(Protocol[R_co]):
    """A call that may take several requests: what to send, and what a reply gives."""

    def request(self) -> tuple[list[Message], list[ToolInfo] | None, dict[str, Any]]: ...

    def downgrade(self, error: ModelStatusError | AllModelsFailedError) -> bool: ...

    def take(self, reply: Message) -> R_co | None: ...


def _ask(llm: Model, session: _Asking[R]) -> R:
    """Sends the session's requests until a reply gives its result."""
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
            return result


async def _aask(llm: Model, session: _Asking[R]) -> R:
    """Async twin of `_ask`."""
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
            return result


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
    typed_partials: bool = False,
    on_item: ItemFunc | None = None,
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
    typed_partials: bool = False,
    on_item: ItemFunc | None = None,
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
    typed_partials: bool = False,
    on_item: ItemFunc | None = None,
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
    typed_partials: bool = False,
    on_item: ItemFunc | None = None,
    **options: Unpack[CallOptions],
) -> Any:
    """Asks `llm` for a value of `output_type` and returns it, validated (with
    `include_raw=True`, an `ObjectResult` holding it, the reply and its usage).

    `prompt` is one user message's text or the messages. `strategy` overrides the model's
    first choice; a reply that does not validate is sent back with its problems up to
    `max_retries` times, then `OutputValidationError` carries every attempt. A refusal raises
    `ModelRefusalError`. `on_partial` (a `PartialFunc`) streams the reply and hears each
    partial value as it grows (built into the type with `typed_partials=True`); `on_item`
    (an `ItemFunc`, for a `list[T]` result) hears each item as soon as it is whole and reads
    as a T, once, in order, across re-asks. The other options are the model's call options.
    """
    streamed = _Streamed(on_partial, typed_partials, on_item, options.get("streaming_func"))
    session = _Session(llm, prompt, output_type, strategy, max_retries, streamed, dict(options))
    result = _ask(llm, session)
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
    typed_partials: bool = False,
    on_item: ItemFunc | None = None,
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
    typed_partials: bool = False,
    on_item: ItemFunc | None = None,
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
    typed_partials: bool = False,
    on_item: ItemFunc | None = None,
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
    typed_partials: bool = False,
    on_item: ItemFunc | None = None,
    **options: Unpack[CallOptions],
) -> Any:
    """Async twin of `generate_object`."""
    streamed = _Streamed(on_partial, typed_partials, on_item, options.get("streaming_func"))
    session = _Session(llm, prompt, output_type, strategy, max_retries, streamed, dict(options))
    result = await _aask(llm, session)
    return result if include_raw else result.value


def generate_parsed(
    llm: Model,
    prompt: str | Sequence[Message],
    read: Callable[[str], Any],
    /,
    *,
    name: str,
    max_retries: int = 0,
    streaming: Callable[[], StreamingFunc] | None = None,
    **options: Unpack[CallOptions],
) -> tuple[Any, Message]:
    """Asks `llm` and reads its reply's text with `read` (an output parser's `parse`): the
    value and the reply. A reply `read` refuses with a ValueError (a `parsers.ParseError`) goes
    back to the model with the error, `max_retries` times at most, as `generate_object` sends
    back one that does not validate; then `OutputValidationError` (naming `name`) carries every
    attempt. `streaming`, when given, makes for each attempt the `streaming_func` that hears
    its text as it comes (a fresh partial reader per attempt), beside a `streaming_func` given
    among the options, which hears every attempt. The other options are the model's call
    options.
    """
    session = _ParsedSession(prompt, read, name, max_retries, streaming, dict(options))
    return _ask(llm, session)


async def agenerate_parsed(
    llm: Model,
    prompt: str | Sequence[Message],
    read: Callable[[str], Any],
    /,
    *,
    name: str,
    max_retries: int = 0,
    streaming: Callable[[], StreamingFunc] | None = None,
    **options: Unpack[CallOptions],
) -> tuple[Any, Message]:
    """Async twin of `generate_parsed`."""
    session = _ParsedSession(prompt, read, name, max_retries, streaming, dict(options))
    return await _aask(llm, session)
