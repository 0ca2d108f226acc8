"""The steps of a pipeline: each part a user pipes (a prompt, a model, a parser, a chain, a
tool, a function, a dict of parts) as a `Step`, and what a step becomes once fitted to the
step before it (`Fitted`: how it runs, what it gives).

A step that is neither a model (an "llm" run of its own) nor a chain (a "chain" run through
`chains.call`) runs as a "chain" run named after it, so that traces, the log and OpenTelemetry
show every step of a pipeline under it with what it took and gave.
"""

from __future__ import annotations

import inspect
import sys
import typing
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chainkit._pipe import Pipeable
from chainkit._stop import to_thread
from chainkit._threads import submit
from chainkit.callbacks.run import active_handler, enter, tokens_wanted
from chainkit.chains import api
from chainkit.chains._shapes import (
    TEXT,
    Adapt,
    Keys,
    Shape,
    Value,
    Wiring,
    check_unused,
    into_keys,
    into_value,
    text_of,
)
from chainkit.chains.chain import Chain
from chainkit.chains.errors import ChainTypeError, InputsTypeError, MissingInputKeysError
from chainkit.llms import Model, agenerate_object, generate_object
from chainkit.llms.structured import agenerate_parsed, generate_parsed
from chainkit.parsers import TypedParser
from chainkit.prompts import BasePromptTemplate
from chainkit.schema import Message

if typing.TYPE_CHECKING:
    from chainkit.documents import Document
    from chainkit.retrievers import Retriever

Run = Callable[[Any, dict[str, Any]], Any]
ARun = Callable[[Any, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Fitted:
    """A step fitted to what the step before it gives: how it runs on that value (with the
    call's options), sync and async, and what it gives."""

    run: Run
    arun: ARun
    gives: Shape


class Step(Pipeable, ABC):
    """A part of a pipeline."""

    name: str = "step"

    takes_value: bool = True
    """Whether, as a pipeline's first step, it takes one value (the pipeline's "input") rather
    than the inputs dict."""

    @abstractmethod
    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        """This step fitted after a step named `before` that gives `given`; raises
        ChainWiringError when it cannot take that."""

    def __repr__(self) -> str:
        return self.name


def adapted(adapt: Adapt | None, run: Run, arun: ARun, gives: Shape) -> Fitted:
    """The step that runs `run`/`arun` on what `adapt` makes of its value."""
    if adapt is None:
        return Fitted(run, arun, gives)

    def run_adapted(value: Any, options: dict[str, Any]) -> Any:
        return run(adapt(value), options)

    async def arun_adapted(value: Any, options: dict[str, Any]) -> Any:
        return await arun(adapt(value), options)

    return Fitted(run_adapted, arun_adapted, gives)


def as_inputs(value: Any) -> Mapping[str, Any]:
    """A step's value as a chain run's inputs (or outputs): a dict as it is, else under
    "input"."""
    return value if type(value) is dict else {"input": value}


def in_run(name: str, value: Any, work: Callable[[Any], Any]) -> Any:
    """`work(value)` as a "chain" run named `name`; with no one listening, no run is made."""
    if active_handler() is None:
        return work(value)
    with enter("chain", name) as run:
        handler = run.handler
        if handler is None:
            return work(value)
        handler.handle_chain_start(name, as_inputs(value))
        result = work(value)
        run.end(result if type(result) is dict else {"output": result})
        return result


async def ain_run(name: str, value: Any, work: Callable[[Any], Awaitable[Any]]) -> Any:
    """Async twin of `in_run`."""
    if active_handler() is None:
        return await work(value)
    with enter("chain", name) as run:
        handler = run.handler
        if handler is None:
            return await work(value)
        handler.handle_chain_start(name, as_inputs(value))
        result = await work(value)
        run.end(result if type(result) is dict else {"output": result})
        return result


def plain_run(name: str, work: Callable[[Any], Any]) -> tuple[Run, ARun]:
    """The sync and async runs of a step whose work is a plain function of its value."""

    def run(value: Any, options: dict[str, Any]) -> Any:
        return in_run(name, value, work)

    async def arun(value: Any, options: dict[str, Any]) -> Any:
        return in_run(name, value, work)

    return run, arun


class PromptStep(Step):
    """A prompt template: takes the dict of its variables (or one value, for a prompt of one
    variable), gives the messages. A model's reply Message fills a variable with its text."""

    takes_value = False

    def __init__(self, prompt: BasePromptTemplate) -> None:
        self.prompt = prompt
        self.name = type(prompt).__name__

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        variables = list(self.prompt.input_variables)
        adapt = into_keys(given, variables, wiring, before, self.name)
        check_unused(given, variables, wiring, before, self.name)
        name, prompt = self.name, self.prompt

        def format_messages(values: Any) -> list[Message]:
            checked = checked_inputs(name, values, variables)
            return prompt.format_messages(**{key: text_of(checked[key]) for key in variables})

        return adapted(adapt, *plain_run(name, format_messages), Value(list[Message]))


def checked_inputs(step: str, values: Any, required: Sequence[str]) -> Mapping[str, Any]:
    """`values` when it is a dict holding the keys `required`; else the error naming what
    came (the types before the step left it open when the pipeline was built)."""
    if not isinstance(values, Mapping):
        raise InputsTypeError(
            f"{step} takes a dict of {list(required)}, got {type(values).__name__}: {values!r:.80}"
        )
    if not all(map(values.__contains__, required)):
        missing = [key for key in required if key not in values]
        raise MissingInputKeysError(step, missing, list(values))
    return values


MODEL_INPUT = str | Message | list[Message]
"""What a model step takes: a user message's text, a message, or the messages."""


def messages_for(step: str, value: Any) -> list[Message]:
    """The messages a model step sends for `value`."""
    if type(value) is list and all(type(item) is Message for item in value):
        return value
    if isinstance(value, str):
        return [Message.user(value)]
    if isinstance(value, Message):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(item, Message) for item in value):
        return list(value)
    raise InputsTypeError(
        f"{step} takes text or messages, got {type(value).__name__}: {value!r:.80}"
    )


def part_name(part: object) -> str:
    """A model's or parser's name in runs and errors: its `name`, else its class's."""
    name = getattr(part, "name", None)
    return name if isinstance(name, str) else type(part).__name__


class ModelStep(Step):
    """A model: takes text or messages, gives the reply Message (the model's "llm" run)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.name = part_name(model)

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        adapt = into_value(given, MODEL_INPUT, before, self.name)
        name, model = self.name, self.model

        def run(value: Any, options: dict[str, Any]) -> Message:
            return model.generate(messages_for(name, value), **options)

        async def arun(value: Any, options: dict[str, Any]) -> Message:
            return await model.agenerate(messages_for(name, value), **options)

        return adapted(adapt, run, arun, Value(Message))


def output_type_of(parser: object) -> Any:
    kind = getattr(parser, "output_type", Any)
    return Any if kind is None else kind


class ParserStep(Step):
    """An output parser: takes text (a reply Message's text), gives what it reads."""

    def __init__(self, parser: Any) -> None:
        self.parser = parser
        self.name = part_name(parser)

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        adapt = into_value(given, TEXT, before, self.name)
        name, parse = self.name, self.parser.parse

        def read(text: Any) -> Any:
            return parse(text_of(text))

        return adapted(adapt, *plain_run(name, read), Value(output_type_of(self.parser)))


class ModelParseStep(Step):
    """A model and the parser right after it, fitted as one step, so that the parser reads
    the reply as the model writes it: a typed parser asks through `llms.generate_object` (its
    strategy: a server's JSON schema mode, a forced tool call, ...); a parser with
    `max_retries` sends a reply that does not parse back with the error; when the run streams,
    each partial value is a partial_object event of the model's run. Reading the whole reply
    is a run of its own after the model's."""

    def __init__(self, model: ModelStep, parser: ParserStep) -> None:
        self.model = model
        self.parser = parser
        self.name = f"{model.name} | {parser.name}"

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        adapt = into_value(given, MODEL_INPUT, before, self.model.name)
        parser = self.parser.parser
        ask = _asking(self.model.model, self.model.name, parser, self.parser.name)
        return adapted(adapt, *ask, Value(output_type_of(parser)))


def _asking(model: Model, model_step: str, parser: Any, name: str) -> tuple[Run, ARun]:
    """The runs of a model step and its parser: the model asked, then the reply read."""
    if isinstance(parser, TypedParser):
        output_type, retries = parser.output_type, parser.max_retries
        strategy: Any = parser.strategy  # a strategy's name, which generate_object checks

        def run_typed(value: Any, options: dict[str, Any]) -> Any:
            messages = messages_for(model_step, value)
            result = generate_object(
                model,
                messages,
                output_type,
                strategy=strategy,
                max_retries=retries,
                include_raw=True,
                **options,
            )
            return in_run(name, result.raw.content, lambda _: result.value)

        async def arun_typed(value: Any, options: dict[str, Any]) -> Any:
            messages = messages_for(model_step, value)
            result = await agenerate_object(
                model,
                messages,
                output_type,
                strategy=strategy,
                max_retries=retries,
                include_raw=True,
                **options,
            )
            return in_run(name, result.raw.content, lambda _: result.value)

        return run_typed, arun_typed
    parse = parser.parse
    retries = getattr(parser, "max_retries", 0)

    def run(value: Any, options: dict[str, Any]) -> Any:
        messages = messages_for(model_step, value)
        if retries:
            read, reply = generate_parsed(
                model,
                messages,
                parse,
                name=name,
                max_retries=retries,
                streaming=_partials_of(parser),
                **options,
            )
            return in_run(name, reply.content, lambda _: read)
        reply = model.generate(messages, **_streamed_into(parser, options))
        return in_run(name, reply.content, parse)

    async def arun(value: Any, options: dict[str, Any]) -> Any:
        messages = messages_for(model_step, value)
        if retries:
            read, reply = await agenerate_parsed(
                model,
                messages,
                parse,
                name=name,
                max_retries=retries,
                streaming=_partials_of(parser),
                **options,
            )
            return in_run(name, reply.content, lambda _: read)
        reply = await model.agenerate(messages, **_streamed_into(parser, options))
        return in_run(name, reply.content, parse)

    return run, arun


def _partials_of(parser: Any) -> Callable[[], Callable[[str], None]] | None:
    """What makes, for each attempt, the streaming_func feeding a fresh partial reader of
    `parser`, when the run streams; None when it does not or `parser` reads no partials."""
    make = getattr(parser, "reader", None)
    if not tokens_wanted() or not callable(make) or make() is None:
        return None
    return lambda: _feeding(make())


def _feeding(reader: Any) -> Callable[[str], None]:
    """The streaming_func that feeds `reader` and reports each partial value it gives as a
    partial_object event of the run it is called in (the model's)."""

    def feed(chunk: str) -> None:
        values = reader.feed(chunk)
        if values:
            handler = active_handler()
            if handler is not None:
                for value in values:
                    handler.handle_partial_object(value)

    return feed


def _streamed_into(parser: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The model's call options, with the parser's partial reader hearing each streamed piece
    when the run streams and the parser can read partial values."""
    make = _partials_of(parser)
    reader_feed = None if make is None else make()
    if reader_feed is None:
        return options
    caller = options.get("streaming_func")
    if caller is None:
        return {**options, "streaming_func": reader_feed}

    def both(chunk: str) -> None:
        caller(chunk)
        reader_feed(chunk)

    return {**options, "streaming_func": both}


def retriever_type() -> type[Retriever] | None:
    """The class of retrievers once anything has imported them, else None: no part made
    before can be one, so a pipeline of no retriever loads none of retrieval's modules."""
    module = sys.modules.get("chainkit.retrievers.base")
    return None if module is None else typing.cast("type[Retriever]", module.Retriever)


class RetrieverStep(Step):
    """A retriever: takes the query (a str, or a model's reply Message: its text), gives the
    documents found, best first (`list[Document]`), as the retriever's own "retriever" run."""

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self.name = retriever.name

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        adapt = into_value(given, str, before, self.name)
        retriever = self.retriever

        def run(value: Any, options: dict[str, Any]) -> list[Document]:
            return retriever.retrieve(value)

        async def arun(value: Any, options: dict[str, Any]) -> list[Document]:
            return await retriever.aretrieve(value)

        from chainkit.documents import Document  # loaded with the retriever's module

        return adapted(adapt, run, arun, Value(list[Document]))


class ChainStep(Step):
    """A chain: takes its inputs dict (or one value, for a chain of one input), gives its
    outputs dict, through `chains.call` (a "chain" run with its memory and checks)."""

    takes_value = False

    def __init__(self, chain: Chain) -> None:
        self.chain = chain
        self.name = chain.name

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        chain = self.chain
        memory = set(chain.memory.memory_variables) if chain.memory is not None else set()
        required = [key for key in chain.input_keys if key not in memory]
        adapt = into_keys(given, required, wiring, before, self.name)

        def run(value: Any, options: dict[str, Any]) -> dict[str, Any]:
            return api.call(chain, value, **options)

        async def arun(value: Any, options: dict[str, Any]) -> dict[str, Any]:
            return await api.acall(chain, value, **options)

        return adapted(adapt, run, arun, Keys(frozenset(chain.output_keys)))


class FunctionStep(Step):
    """A function of one value, sync or async: takes what its parameter's annotation says (a
    dict for `dict`, `Mapping` or a TypedDict; else one value), gives what its return
    annotation says. In async runs a sync function runs in a worker thread unless it says it
    never blocks (`blocking=False`)."""

    def __init__(self, function: Callable[..., Any], name: str | None, blocking: bool) -> None:
        self.function = function
        self.name: str = name or str(getattr(function, "__name__", type(function).__name__))
        self.blocking = blocking
        self.is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004  # an object's async __call__
        )
        takes, gives = _function_shapes(function, self.name)
        self.takes = takes
        self.gives = gives
        self.takes_value = not isinstance(takes, Keys)

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        takes = self.takes
        if isinstance(takes, Keys):
            adapt = into_keys(given, sorted(takes.known), wiring, before, self.name)
        else:
            adapt = into_value(given, takes.type, before, self.name)
        return adapted(adapt, *self._runs(), self.gives)

    def _runs(self) -> tuple[Run, ARun]:
        name, function = self.name, self.function
        if self.is_async:

            def run(value: Any, options: dict[str, Any]) -> Any:
                return in_run(name, value, _awaited_in_thread(function))

            async def arun(value: Any, options: dict[str, Any]) -> Any:
                return await ain_run(name, value, function)

            return run, arun
        if not self.blocking:
            return plain_run(name, function)

        def run_sync(value: Any, options: dict[str, Any]) -> Any:
            return in_run(name, value, function)

        async def arun_in_thread(value: Any, options: dict[str, Any]) -> Any:
            return await ain_run(name, value, _in_worker(name, function))

        return run_sync, arun_in_thread


def _awaited_in_thread(function: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Any]:
    """An async function called from sync code: run to its end on an event loop of its own,
    in a worker thread (the calling thread may be running a loop already)."""
    import asyncio

    def call(value: Any) -> Any:
        return submit(asyncio.run, function(value)).result()

    return call


def _in_worker(name: str, function: Callable[[Any], Any]) -> Callable[[Any], Awaitable[Any]]:
    async def call(value: Any) -> Any:
        return await to_thread(f"step {name}", function, value)

    return call


def _function_shapes(function: Callable[..., Any], name: str) -> tuple[Shape, Shape]:
    """What a step function takes and gives, read from its signature; ChainTypeError for a
    function that cannot take one value."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return Value(), Value()
    parameters = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    variadic = any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values())
    if len(parameters) > 1 or (not parameters and not variadic):
        raise ChainTypeError(
            f"a pipeline step function takes one value (the step before's); {name}"
            f"{signature} takes {len(parameters)}: take a dict, or use "
            "chains.step(lambda inputs: ...) to adapt it"
        )
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # annotations that do not resolve say nothing
        hints = {}
    taken = hints.get(parameters[0].name, Any) if parameters else Any
    owner = getattr(function, "__objclass__", None)
    if isinstance(owner, type):  # a method of a built-in type, as `str.upper`, takes one
        taken = owner
    unannotated = Iterator[Any] if inspect.isgeneratorfunction(function) else Any
    return _taken_shape(taken), _given_shape(hints.get("return", unannotated))


def _taken_shape(annotation: Any) -> Shape:
    """A TypedDict's keys are needed; a `dict` or `Mapping` takes any dict."""
    if typing.is_typeddict(annotation):
        return Keys(frozenset(annotation.__required_keys__))
    origin = typing.get_origin(annotation) or annotation
    if isinstance(origin, type) and issubclass(origin, Mapping):
        return Keys(frozenset())
    return Value(annotation)


def _given_shape(annotation: Any) -> Shape:
    """A TypedDict's keys are sure to be there; of a `dict`, no key is known."""
    if typing.is_typeddict(annotation):
        return Keys(frozenset(annotation.__required_keys__))
    return Value(annotation)
