"""Pipeline: steps joined with `|`, run one after another, each on the value the one before
gave; a chain like any other, fitted together when built.

The rule between `call(inputs) -> outputs` and the values the steps pass on: a pipeline's
first step gets the inputs dict, or `inputs["input"]` when it takes one value (a model, a
parser, a function); the outputs are the last step's dict, or `{"output": value}` for a step
that gives one value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chainkit._pipe import register
from chainkit.callbacks import Handlers
from chainkit.chains._memory_fit import check_memory_fits
from chainkit.chains._shapes import Keys, Value, Wiring, type_name
from chainkit.chains._steps import PromptStep, Step
from chainkit.chains.chain import Chain
from chainkit.chains.errors import ChainTypeError
from chainkit.chains.steps import PipelineStep, arun_all, as_step, fit_all, fused, run_all
from chainkit.prompts import BasePromptTemplate
from chainkit.schema import Memory

__all__ = ["Pipeline", "pipe"]

INPUT_KEY = "input"
OUTPUT_KEY = "output"


class Pipeline(Chain):
    """`steps` (anything `|` joins: prompts, models, parsers, chains, tools, functions, dicts
    of them, and the steps of `chains.steps`) run in order, each on what the one before gave.

    Built, the steps are fitted to each other: a step that cannot take what the one before
    gives (keys missing or left unused, a type it cannot read) raises ChainWiringError
    naming both, before anything runs. `a | b` builds `Pipeline([a, b])`; a pipeline piped
    on is extended, one inside a dict or a branch runs as a step of its own.
    """

    def __init__(
        self,
        steps: Sequence[object],
        *,
        name: str = "Pipeline",
        memory: Memory | None = None,
        callbacks: Handlers = None,
    ) -> None:
        if isinstance(steps, str | bytes) or not isinstance(steps, Sequence) or not steps:
            raise ChainTypeError(
                f"Pipeline takes a non-empty list of steps, got {type(steps).__name__}"
            )
        if not isinstance(name, str) or not name:
            raise ChainTypeError(f"Pipeline name must be a non-empty str, got {name!r}")
        self.steps: tuple[Step, ...] = tuple(fused([as_step(each) for each in steps]))
        self._name = name
        self.memory = memory
        self.callbacks = callbacks
        self._takes_value = self.steps[0].takes_value
        wiring = Wiring()
        start = Value() if self._takes_value else Keys(frozenset(), carries_inputs=True)
        self._fitted, self._gives = fit_all(self.steps, start, "the pipeline's start", wiring)
        self._input_keys = [INPUT_KEY] if self._takes_value else wiring.inputs
        self._outputs_dict = isinstance(self._gives, Keys)
        if memory is not None:
            check_memory_fits(memory, self._input_keys, self._first_prompt)

    @property
    def _first_prompt(self) -> BasePromptTemplate | None:
        """The prompt template the pipeline starts with, if it starts with one."""
        first = self.steps[0]
        return first.prompt if isinstance(first, PromptStep) else None

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"{self._name}({' | '.join(each.name for each in self.steps)})"

    @property
    def input_keys(self) -> list[str]:
        return list(self._input_keys)

    @property
    def output_keys(self) -> list[str]:
        gives = self._gives
        return sorted(gives.known) if isinstance(gives, Keys) else [OUTPUT_KEY]

    @property
    def output_not_text(self) -> str | None:
        gives = self._gives
        if isinstance(gives, Value) and gives.type not in (Any, str):
            return f"gives {type_name(gives.type)} (its last step is {self.steps[-1].name})"
        return None

    def as_step(self) -> Step:
        """This pipeline as a step inside another (a dict's value, a branch)."""
        return PipelineStep(self.steps, self._name)

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        value = inputs[INPUT_KEY] if self._takes_value else inputs
        return self._outputs(run_all(self._fitted, value, options))

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        value = inputs[INPUT_KEY] if self._takes_value else inputs
        return self._outputs(await arun_all(self._fitted, value, options))

    def _outputs(self, value: Any) -> dict[str, Any]:
        return value if self._outputs_dict else {OUTPUT_KEY: value}


def pipe(*steps: object) -> Pipeline:
    """The pipeline of `steps`: `pipe(a, b, c)` is `a | b | c`, for a pipeline whose first
    two steps are functions (which `|` cannot join) or built from a list."""
    return Pipeline(steps)


def _composed(left: object, right: object) -> Pipeline:
    """`left | right`: a pipeline piped on is extended rather than nested."""
    head = list(left.steps) if isinstance(left, Pipeline) and _plain(left) else [left]
    tail = list(right.steps) if isinstance(right, Pipeline) and _plain(right) else [right]
    return Pipeline([*head, *tail])


def _plain(pipeline: Pipeline) -> bool:
    """Whether a pipeline is only its steps (no name, memory or callbacks of its own to keep
    around them), so that piping on extends it."""
    return pipeline.name == "Pipeline" and pipeline.memory is None and pipeline.callbacks is None


register(_composed)
