"""Fallbacks: a model made of several, the next answering when one fails in a way another
model may not.

Each model's call is its own "llm" run, named by that model, in the run that called the
`Fallbacks`: a trace, the log, the HTML page and OpenTelemetry show the model that failed (its
run ends in an error) and the one that answered (its run ends with the reply). A model that
failed after streaming text has its run end in error, so what its tokens said is no part of
the reply; the next model streams its reply from its start (`FinalAnswerStream` yields an
`AnswerRestart` before it when its answer differs from what was yielded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar, Unpack

from chainkit._pipe import Pipeable
from chainkit.llms._streaming import HandedOnce
from chainkit.llms.errors import AllModelsFailedError, ModelConfigError, ModelTypeError
from chainkit.llms.model import Model, check_messages, check_streaming_func, model_name
from chainkit.llms.options import CallOptions
from chainkit.llms.output_strategies import StrategyName, common_strategies
from chainkit.llms.retry import is_retryable
from chainkit.schema import Message, ToolInfo

__all__ = ["FallBackOn", "Fallbacks", "Turns", "fall_back_rule", "falls_back_by_default"]

E = TypeVar("E", bound=Exception)

FallBackOn = type[Exception] | tuple[type[Exception], ...] | Callable[[Exception], bool]
"""Which errors pass a call on to the next model: exception classes, or a function that says
it of an error."""


def falls_back_by_default(error: Exception) -> bool:
    """Whether the next model takes over by default: on the errors a backend retries (429,
    408, 409 and 5xx answers, timeouts, broken connections, garbled replies), which its own
    retries did not fix, and when the models of an inner `Fallbacks` all failed so."""
    return isinstance(error, AllModelsFailedError) or is_retryable(error)


class Fallbacks(Pipeable):
    """A model that calls `models` in turn: the first answers unless it fails with an error
    `fall_back_on` takes, in which case the next is called with the same messages, tools and
    options, and so on. It is a `Model` like any other (agents, LLMChain, `llms.call`,
    streaming), sync and async.

    By default (`falls_back_by_default`) a call falls back on what each model's own retries
    gave up on: a 429, 408, 409 or 5xx answer, a timeout or a broken connection, a reply that
    could not be read. It does not fall back on a 400 or 422 (the request is wrong: the next
    model would get the same request, and the bug would cost a call per model, hidden),
    401, 403 or 404 (a wrong key, model name or URL: a set-up mistake to fix, not to be
    served silently by another model), a refusal (the model's answer) or a reply of the wrong
    shape, nor on an answer refusing a field of the request (`ModelStatusError.refuses`). Such
    an error is raised as it is, and the models after it are not called.
    `fall_back_on` changes that: exception classes (`(llms.ModelError,)` falls back on
    every model error) or a function of the error.

    When every model fails, `AllModelsFailedError` carries each model's error. A
    `streaming_func` hears one model's text: after a model that failed mid-stream, the next
    model's text is handed over only where it repeats what was handed over already and then
    goes on; handlers hear every model's tokens, each in its own run.
    """

    def __init__(
        self, models: Sequence[Model], *, fall_back_on: FallBackOn = falls_back_by_default
    ) -> None:
        self.models = _checked_models(models)
        self._falls_back = fall_back_rule(fall_back_on)

    def __repr__(self) -> str:
        return f"Fallbacks([{', '.join(map(model_name, self.models))}])"

    @property
    def output_strategies(self) -> tuple[StrategyName, ...]:
        """How `llms.generate_object` asks these models for a typed result: the strategies
        every one of them takes (any of them may answer), in the first one's order."""
        return common_strategies(self.models)

    def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Unpack[CallOptions],
    ) -> Message:
        check_messages(messages)  # a wrong type is no model's failure: none is tried
        turns = _ModelTurns(self.models, self._falls_back, options)
        for model in turns:
            try:
                return model.generate(messages, tools=tools, **options)
            except Exception as error:
                turns.failed(model_name(model), error)
        raise turns.exhausted()

    async def agenerate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        **options: Unpack[CallOptions],
    ) -> Message:
        check_messages(messages, "agenerate")
        turns = _ModelTurns(self.models, self._falls_back, options)
        for model in turns:
            try:
                return await model.agenerate(messages, tools=tools, **options)
            except Exception as error:
                turns.failed(model_name(model), error)
        raise turns.exhausted()

    def close(self) -> None:
        """Closes each model that has connections to close."""
        for model in self.models:
            close = getattr(model, "close", None)
            if callable(close):
                close()

    async def aclose(self) -> None:
        """Closes each model's async connections (before the event loop ends)."""
        for model in self.models:
            aclose = getattr(model, "aclose", None)
            if callable(aclose):
                await aclose()


class Turns(Generic[E]):
    """The failures of one call whose alternatives take turns (a `Fallbacks`' models, a
    pipeline's `chains.fallbacks` steps): which errors pass the call on, and the error that
    ends it when every alternative failed."""

    def __init__(
        self,
        falls_back: Callable[[Exception], bool],
        all_failed: Callable[[Sequence[tuple[str, Exception]]], E],
    ) -> None:
        self._falls_back = falls_back
        self._all_failed = all_failed
        self._failures: list[tuple[str, Exception]] = []

    def failed(self, name: str, error: Exception) -> None:
        """Notes the error of the alternative `name`, or raises it when it is not one to
        fall back on."""
        if not self._falls_back(error):
            raise error
        self._failures.append((name, error))

    def exhausted(self) -> E:
        """The error of a call that every alternative failed, caused by the last one's."""
        error = self._all_failed(self._failures)
        error.__cause__ = self._failures[-1][1]
        return error


class _ModelTurns(Turns[AllModelsFailedError]):
    """The models of one call, in turn: takes the caller's streaming_func out of `options`
    and puts a `HandedOnce` in its place, which each model's turn restarts."""

    def __init__(
        self,
        models: tuple[Model, ...],
        falls_back: Callable[[Exception], bool],
        options: CallOptions,
    ) -> None:
        super().__init__(falls_back, AllModelsFailedError)
        self._models = models
        caller = options.get("streaming_func")
        self._once: HandedOnce | None = None
        if caller is not None:
            check_streaming_func(caller)
            options["streaming_func"] = self._once = HandedOnce(caller)

    def __iter__(self) -> Iterator[Model]:
        for model in self._models:
            if self._once is not None:
                self._once.restart()
            yield model


def _checked_models(models: object) -> tuple[Model, ...]:
    if isinstance(models, str | bytes) or not isinstance(models, Sequence):
        raise ModelTypeError(
            f"Fallbacks takes a list of models, primary first, got {type(models).__name__}"
        )
    if not models:
        raise ModelConfigError("Fallbacks needs at least one model, got an empty list")
    for position, model in enumerate(models):
        if not isinstance(model, Model):
            raise ModelTypeError(
                f"Fallbacks: models[{position}] is {type(model).__name__}, not a model (an "
                "object with generate and agenerate, such as llms.OpenAI)"
            )
    return tuple(models)


def fall_back_rule(fall_back_on: object) -> Callable[[Exception], bool]:
    """`fall_back_on` as a function of the error; raises for anything else."""
    classes = (fall_back_on,) if isinstance(fall_back_on, type) else fall_back_on
    if isinstance(classes, tuple):
        if classes and all(isinstance(c, type) and issubclass(c, Exception) for c in classes):
            return lambda error: isinstance(error, classes)
    elif callable(fall_back_on):
        return fall_back_on
    raise ModelTypeError(
        "fall_back_on must be exception classes, such as (llms.ModelError,), or a function "
        f"of the error that says whether to fall back, got {fall_back_on!r}"
    )
