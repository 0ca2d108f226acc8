"""An agent's final answer read into a type: the Executor's `output_type`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from chainkit._jsonschema.output import Invalid, OutputShape
from chainkit._text import short_repr
from chainkit.agents.errors import AgentTypeError, OutputParserError
from chainkit.schema import AgentFinish

_ASKING = "Give your final answer as one JSON object that matches this JSON Schema: {schema}"
_REJECTED = (
    "Your final answer did not fit the schema: {problems}. Give your final answer again as "
    "one JSON object that matches the schema."
)


class TypedAnswer:
    """What the model is told of the type, and the reading of its final answer into it."""

    def __init__(self, output_type: object) -> None:
        try:
            self.shape = OutputShape(output_type)
        except TypeError as error:
            raise AgentTypeError(
                f"output_type {short_repr(output_type, 200)} has no JSON schema: {error}"
            ) from None
        self.instructions = _ASKING.format(schema=json.dumps(self.shape.schema, ensure_ascii=False))

    def asking(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """`inputs` with the question (`input`, when it is text) asking for the schema."""
        question = inputs.get("input")
        if not isinstance(question, str):
            return inputs
        return {**inputs, "input": f"{question}\n\n{self.instructions}"}

    def read(self, finish: AgentFinish, output_keys: Sequence[str]) -> AgentFinish:
        """`finish` with its answer read into the type; OutputParserError, whose observation
        names each problem, when it does not fit."""
        values: Mapping[str, Any] = finish.return_values
        key = output_keys[0]
        answer = values.get(key)
        value = self.shape.read_text(answer) if isinstance(answer, str) else self.shape.read(answer)
        if isinstance(value, Invalid):
            raise OutputParserError(_REJECTED.format(problems=value), llm_output=finish.log)
        return AgentFinish({**values, key: value}, log=finish.log)
