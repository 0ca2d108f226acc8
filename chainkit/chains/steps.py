"""The steps a pipeline is made of besides its parts: a function (`step`), a dict of steps run
side by side, `assign`, `pick`, `branch`, `fallbacks` and `retry`; and `as_step`, which makes a
step of anything pipeable."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chainkit._threads import submit
from chainkit.callbacks.pacing import pacer_of
from chainkit.callbacks.run import active_handler, enter
from chainkit.chains import api
from chainkit.chains._shapes import (
    Keys,
    Shape,
    Value,
    Wiring,
    into_keys,
    into_value,
    is_dict_type,
)
from chainkit.chains._steps import (
    ChainStep,
    Fitted,
    FunctionStep,
    ModelParseStep,
    ModelStep,
    ParserStep,
    PromptStep,
    RetrieverStep,
    Step,
    adapted,
    ain_run,
    checked_inputs,
    in_run,
    plain_run,
    retriever_type,
)
from chainkit.chains.chain import Chain
from chainkit.chains.errors import AllStepsFailedError, ChainTypeError, ChainWiringError
from chainkit.llms import Model
from chainkit.llms.fallbacks import FallBackOn, Turns, fall_back_rule, falls_back_by_default
from chainkit.llms.retry import Backoff, RetryPolicy
from chainkit.prompts import BasePromptTemplate
from chainkit.tools import Tool

__all__ = ["as_step", "assign", "branch", "fallbacks", "pick", "retry", "step"]


def step(function: Callable[..., Any], *, name: str | None = None, blocking: bool = True) -> Step:
    """`function` (sync or async, of one value) as a pipeline step, named `name` (its own
    name by default). Its parameter's annotation says what it takes (`dict`, `Mapping` or a
    TypedDict: the dict; anything else: one value), its return annotation what it gives. A
    function piped to a prompt, model, parser or chain is taken as is; `step` is for a
    pipeline that starts with two functions, a name, or `blocking=False`: a sync function
    that never waits, called in the event loop's thread in async runs rather than a worker's."""
    if not callable(function):
        raise ChainTypeError(f"chains.step takes a function, got {type(function).__name__}")
    return FunctionStep(function, name, blocking)


def pick(*keys: str) -> Step:
    """The value under `key` of the dict it gets (`pick("a")`), or a dict of several keys
    (`pick("a", "b")`): LangChain's itemgetter."""
    if not keys or not all(isinstance(key, str) for key in keys):
        raise ChainTypeError(f"chains.pick takes one or more key names, got {keys!r}")
    return _Pick(keys)


def assign(**steps: object) -> Step:
    """The dict it gets, with a key added for each step given, whose value that step gives on
    the same dict (the steps run side by side): LangChain's RunnablePassthrough.assign."""
    if not steps:
        raise ChainTypeError("chains.assign needs at least one key=step")
    return _Assign(_Parallel({key: as_step(value) for key, value in steps.items()}))


def branch(*cases: tuple[Callable[[Any], bool], object], default: object) -> Step:
    """The step of the first case whose condition holds for the value it gets (a function of
    it, returning a bool), else `default`: LangChain's RunnableBranch. Every case's step is
    fitted to the step before when the pipeline is built."""
    checked: list[tuple[Callable[[Any], bool], Step]] = []
    for position, case in enumerate(cases):
        if not (isinstance(case, tuple) and len(case) == 2 and callable(case[0])):
            raise ChainTypeError(
                f"chains.branch: case {position} must be a (condition, step) pair, got {case!r:.80}"
            )
        checked.append((case[0], as_step(case[1])))
    return _Branch(checked, as_step(default))


def fallbacks(
    primary: object, *backups: object, fall_back_on: FallBackOn = falls_back_by_default
) -> Step:
    """`primary`, and when it fails with an error `fall_back_on` takes, each of `backups` in
    turn on the same value: `llms.Fallbacks` for any step (the same rule, by default the
    errors a model's own retries gave up on). When all fail, AllStepsFailedError carries
    each one's error."""
    if not backups:
        raise ChainTypeError("chains.fallbacks needs a step and at least one backup")
    return _Fallbacks([as_step(primary), *map(as_step, backups)], fall_back_rule(fall_back_on))


def retry(
    step: object,
    *,
    max_attempts: int = 3,
    backoff: Backoff | None = None,
    retry_on: FallBackOn = falls_back_by_default,
) -> Step:
    """`step`, tried again when it fails with an error `retry_on` takes (by default the
    errors a model's own retries give up on), at most `max_attempts` times, waiting as
    `backoff` says (llms.Backoff); each retry is a retry event. The policy is the models'."""
    rule = fall_back_rule(retry_on)
    policy = RetryPolicy(
        max_attempts,
        backoff or Backoff(),
        retry_if=lambda error: isinstance(error, Exception) and rule(error),
    )
    return _Retry(as_step(step), policy)


def as_step(part: object) -> Step:
    """`part` as a pipeline step; ChainTypeError naming what can be one."""
    if isinstance(part, Step):
        return part
    if isinstance(part, Chain):
        nested = getattr(part, "as_step", None)
        return nested() if callable(nested) else ChainStep(part)
    if isinstance(part, Mapping):
        if not part or not all(isinstance(key, str) for key in part):
            raise ChainTypeError(f"a dict step maps output keys (str) to steps, got {part!r:.80}")
        return _Parallel({key: as_step(value) for key, value in part.items()})
    if isinstance(part, BasePromptTemplate):
        return PromptStep(part)
    if isinstance(part, Model):
        return ModelStep(part)
    if isinstance(part, Tool):
        return _ToolStep(part)
    retriever = retriever_type()
    if retriever is not None and isinstance(part, retriever):
        return RetrieverStep(part)
    if callable(getattr(part, "parse", None)):
        return ParserStep(part)
    if callable(part):
        return FunctionStep(part, None, blocking=True)
    raise ChainTypeError(
        f"{type(part).__name__} cannot be a pipeline step: pipe prompts, models, output "
        "parsers, chains, tools, retrievers, functions, or a dict of them"
    )


def fused(steps: Sequence[Step]) -> list[Step]:
    """`steps`, each model followed by a parser made one step that streams into the parser."""
    result: list[Step] = []
    for each in steps:
        if isinstance(each, ParserStep) and result and isinstance(result[-1], ModelStep):
            result[-1] = ModelParseStep(result[-1], each)
        else:
            result.append(each)
    return result


def fit_all(
    steps: Sequence[Step], given: Shape, before: str, wiring: Wiring
) -> tuple[list[Fitted], Shape]:
    """Each of `steps` fitted to the one before it, the first to `given`; and what the last
    gives."""
    fitted = []
    for each in steps:
        one = each.fit(given, before, wiring)
        fitted.append(one)
        given, before, wiring = one.gives, each.name, wiring.for_next()
    return fitted, given


def run_all(fitted: Sequence[Fitted], value: Any, options: dict[str, Any]) -> Any:
    """Runs the steps in turn; a stream's reader is caught up with before each step after the
    first, so that a reader who stopped reading stops the steps not yet started."""
    pacer = pacer_of(active_handler())
    first, *rest = fitted
    value = first.run(value, options)
    for one in rest:
        if pacer is not None:
            pacer.pause()
        value = one.run(value, options)
    return value


async def arun_all(fitted: Sequence[Fitted], value: Any, options: dict[str, Any]) -> Any:
    """Async twin of `run_all`."""
    pacer = pacer_of(active_handler())
    first, *rest = fitted
    value = await first.arun(value, options)
    for one in rest:
        if pacer is not None:
            await pacer.apause()
        value = await one.arun(value, options)
    return value


class PipelineStep(Step):
    """A pipeline inside another (a dict's value, a branch): its steps fitted to the value it
    gets, run as a "chain" run of its own."""

    def __init__(self, steps: Sequence[Step], name: str) -> None:
        self.steps = list(steps)
        self.name = name
        self.takes_value = self.steps[0].takes_value

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        fitted, gives = fit_all(self.steps, given, before, wiring)
        name = self.name

        def run(value: Any, options: dict[str, Any]) -> Any:
            return in_run(name, value, lambda v: run_all(fitted, v, options))

        async def arun(value: Any, options: dict[str, Any]) -> Any:
            return await ain_run(name, value, lambda v: arun_all(fitted, v, options))

        return Fitted(run, arun, gives)


class _Parallel(Step):
    """A dict of steps: each runs on the same value, side by side (threads, or tasks); gives
    the dict of their values."""

    def __init__(self, steps: dict[str, Step]) -> None:
        self.steps = steps
        self.name = "Parallel"
        self.takes_value = all(each.takes_value for each in steps.values())

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        members = wiring.for_members()
        fitted = {key: each.fit(given, before, members) for key, each in self.steps.items()}
        return Fitted(*self._runs(fitted), Keys(frozenset(fitted)))

    def _runs(self, fitted: dict[str, Fitted]) -> tuple[Any, Any]:
        name = self.name
        keys = list(fitted)
        first, *rest = fitted.values()

        def side_by_side(value: Any, options: dict[str, Any]) -> dict[str, Any]:
            # Each branch in a worker carrying this context (the run is its parent), the
            # first in this thread: one hop fewer.
            futures = [submit(one.run, value, options) for one in rest]
            results = [first.run(value, options), *(future.result() for future in futures)]
            return dict(zip(keys, results, strict=True))

        async def as_tasks(value: Any, options: dict[str, Any]) -> dict[str, Any]:
            import asyncio

            tasks = [asyncio.ensure_future(one.arun(value, options)) for one in fitted.values()]
            results = await api._gathered(tasks, return_exceptions=False)
            return dict(zip(keys, results, strict=True))

        def run(value: Any, options: dict[str, Any]) -> Any:
            return in_run(name, value, lambda v: side_by_side(v, options))

        async def arun(value: Any, options: dict[str, Any]) -> Any:
            return await ain_run(name, value, lambda v: as_tasks(v, options))

        return run, arun


class _Assign(Step):
    takes_value = False

    def __init__(self, added: _Parallel) -> None:
        self.added = added
        self.name = "assign"

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        if isinstance(given, Value) and not _takes_dict(given):
            raise ChainWiringError(
                f"chains.assign adds keys to a dict, and {before} gives {given}: put a dict "
                "step or chains.pick before it"
            )
        inner = self.added.fit(given, before, wiring)
        known = given.known if isinstance(given, Keys) else frozenset()
        carries = isinstance(given, Keys) and given.carries_inputs
        gives = Keys(known | frozenset(self.added.steps), carries)
        name = self.name

        def run(value: Any, options: dict[str, Any]) -> Any:
            return in_run(name, value, lambda v: {**v, **inner.run(v, options)})

        async def arun(value: Any, options: dict[str, Any]) -> Any:
            async def merged(v: Any) -> Any:
                return {**v, **(await inner.arun(v, options))}

            return await ain_run(name, value, merged)

        return Fitted(run, arun, gives)


def _takes_dict(given: Value) -> bool:
    return given.type is Any or is_dict_type(given.type)


class _Pick(Step):
    takes_value = False

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = list(keys)
        self.name = f"pick({', '.join(map(repr, keys))})"

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        if isinstance(given, Value) and not _takes_dict(given):
            raise ChainWiringError(f"{self.name} takes a dict, and {before} gives {given}")
        into_keys(given, self.keys, wiring, before, self.name)
        keys, name = self.keys, self.name
        if len(keys) == 1:
            (key,) = keys

            def one(values: Any) -> Any:
                return checked_inputs(name, values, keys)[key]

            return Fitted(*plain_run(name, one), Value())

        def several(values: Any) -> dict[str, Any]:
            checked = checked_inputs(name, values, keys)
            return {k: checked[k] for k in keys}

        return Fitted(*plain_run(name, several), Keys(frozenset(keys)))


class _Branch(Step):
    def __init__(self, cases: list[tuple[Callable[[Any], bool], Step]], default: Step) -> None:
        self.cases = cases
        self.default = default
        self.name = "branch"
        self.takes_value = default.takes_value

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        conditions = [condition for condition, _ in self.cases]
        members = wiring.for_members()
        chosen = [each.fit(given, before, members) for _, each in self.cases]
        otherwise = self.default.fit(given, before, members)
        gives = _common([one.gives for one in [*chosen, otherwise]])
        name = self.name

        def pick_step(value: Any) -> Fitted:
            for condition, one in zip(conditions, chosen, strict=True):
                if condition(value):
                    return one
            return otherwise

        def run(value: Any, options: dict[str, Any]) -> Any:
            return in_run(name, value, lambda v: pick_step(v).run(v, options))

        async def arun(value: Any, options: dict[str, Any]) -> Any:
            return await ain_run(name, value, lambda v: pick_step(v).arun(v, options))

        return Fitted(run, arun, gives)


def _common(shapes: Sequence[Shape]) -> Shape:
    """What a step gives that gives any one of `shapes`."""
    if all(isinstance(shape, Keys) for shape in shapes):
        keys = [shape for shape in shapes if isinstance(shape, Keys)]
        known = frozenset.intersection(*(shape.known for shape in keys))
        return Keys(known, any(shape.carries_inputs for shape in keys))
    first = shapes[0]
    if all(shape == first for shape in shapes):
        return first
    return Value()


class _Fallbacks(Step):
    def __init__(self, steps: list[Step], falls_back: Callable[[Exception], bool]) -> None:
        self.steps = steps
        self.falls_back = falls_back
        self.name = "fallbacks"
        self.takes_value = steps[0].takes_value

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        members = wiring.for_members()
        fitted = [each.fit(given, before, members) for each in self.steps]
        names = [each.name for each in self.steps]
        falls_back, name = self.falls_back, self.name

        def run(value: Any, options: dict[str, Any]) -> Any:
            def turns(v: Any) -> Any:
                turn = Turns(falls_back, _all_failed)
                for step_name, one in zip(names, fitted, strict=True):
                    try:
                        return one.run(v, options)
                    except Exception as error:  # the rule decides
                        turn.failed(step_name, error)
                raise turn.exhausted()

            return in_run(name, value, turns)

        async def arun(value: Any, options: dict[str, Any]) -> Any:
            async def turns(v: Any) -> Any:
                turn = Turns(falls_back, _all_failed)
                for step_name, one in zip(names, fitted, strict=True):
                    try:
                        return await one.arun(v, options)
                    except Exception as error:  # the rule decides
                        turn.failed(step_name, error)
                raise turn.exhausted()

            return await ain_run(name, value, turns)

        return Fitted(run, arun, _common([one.gives for one in fitted]))


def _all_failed(failures: Sequence[tuple[str, Exception]]) -> AllStepsFailedError:
    return AllStepsFailedError(failures)


class _Retry(Step):
    def __init__(self, step: Step, policy: RetryPolicy) -> None:
        self.step = step
        self.policy = policy
        self.name = f"retry({step.name})"
        self.takes_value = step.takes_value

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        inner = self.step.fit(given, before, wiring)
        policy = self.policy

        def run(value: Any, options: dict[str, Any]) -> Any:
            return policy.call(active_handler(), lambda: inner.run(value, options))

        async def arun(value: Any, options: dict[str, Any]) -> Any:
            async def attempt() -> Any:  # a coroutine function: tenacity awaits only those
                return await inner.arun(value, options)

            return await policy.acall(active_handler(), attempt)

        return Fitted(run, arun, inner.gives)


class _ToolStep(Step):
    """A tool: takes its input text (or a dict of its arguments), gives its output text, as a
    "tool" run."""

    def __init__(self, tool: Tool) -> None:
        self.tool = tool
        self.name = tool.name

    def fit(self, given: Shape, before: str, wiring: Wiring) -> Fitted:
        adapt = into_value(given, Any, before, self.name)
        tool = self.tool

        def call(value: Any) -> str:
            if isinstance(value, str):
                return tool.call(value)
            return tool.call_arguments(json.dumps(value, ensure_ascii=False))

        def run(value: Any, options: dict[str, Any]) -> str:
            with enter("tool", tool.name) as tool_run:
                handler = tool_run.handler
                if handler is not None:
                    handler.handle_tool_start(tool.name, _shown(value), None)
                output = call(value)
                tool_run.end(output)
                return output

        async def arun(value: Any, options: dict[str, Any]) -> str:
            from chainkit._threads import in_thread

            return await in_thread(run, value, options)

        return adapted(adapt, run, arun, Value(str))


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
