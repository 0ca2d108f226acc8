"""An agent's final answer read into a type (the Executor's `output_type`), asked for and
re-asked by the engine of `llms.generate_object`: its output shape, its strategies' tool,
instructions and rejections.

A tool-calling agent is offered the final-answer tool beside its own (the tool strategy's
tool, renamed): the model ends the run by calling it, its arguments the answer. A MRKL agent's
prompt gets the prompted strategy's instructions, worded for its `Final Answer:`. An answer
that does not fit goes back as the strategy's rejection; the answer asked for at a limit is
a `generate_object` call, so a server refusing a strategy's field moves to the next one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from chainkit._jsonschema.output import SCHEMA_MARK, Invalid, OutputShape
from chainkit._text import short_repr
from chainkit.agents.errors import AgentTypeError, OutputParserError
from chainkit.llms import (
    Model,
    ObjectResult,
    OutputValidationError,
    agenerate_object,
    generate_object,
)
from chainkit.llms.output_strategies import (
    FINAL_ANSWER_TOOL,
    STRATEGIES,
    final_answer_tool,
    with_instructions,
)
from chainkit.schema import Message, ToolCall

FINAL_ANSWER_INSTRUCTIONS = (
    f"Your Final Answer must be one JSON object that {SCHEMA_MARK}:\n```json\n{{schema}}\n```"
)
"""The prompted strategy's instructions for an agent that answers after `Final Answer:`."""


class TypedAnswer:
    """The type an agent's final answer is read into, and how the model is asked for it."""

    def __init__(self, output_type: object) -> None:
        try:
            self.shape = OutputShape(output_type)
        except TypeError as error:
            raise AgentTypeError(
                f"output_type {short_repr(output_type, 200)} has no JSON schema: {error}"
            ) from None
        self.tool = final_answer_tool(self.shape)

    def instructed(self, messages: Sequence[Message]) -> list[Message]:
        """`messages` with the prompted strategy's instructions for the final answer."""
        return with_instructions(messages, self.shape, FINAL_ANSWER_INSTRUCTIONS)

    def read(self, text: str, reply: Message) -> Any:
        """The answer `text` (of `reply`) read into the type; OutputParserError, whose
        observation is the prompted strategy's rejection naming each problem, when it does
        not fit."""
        value = self.shape.read_text(text)
        if isinstance(value, Invalid):
            [*_, rejection] = STRATEGIES["prompted"].rejection(reply, str(value))
            raise OutputParserError(
                rejection.content, reply.content, typed_answer=True, reply=reply
            )
        return value

    def read_call(self, call: ToolCall, reply: Message) -> Any:
        """The final-answer tool's arguments read into the type; OutputParserError, carrying
        the reply cut to this call and the tool strategy's rejection as its answer, when they
        do not fit."""
        text = call.function.arguments
        value = self.shape.read_text(text)
        if isinstance(value, Invalid):
            # Its answer must point at its call: a server may have sent no id.
            call = call if call.id else replace(call, id="call_final_answer")
            asked = Message.assistant(reply.content, [call])
            [*_, rejection] = STRATEGIES["tool"].rejection(asked, str(value))
            raise OutputParserError(
                rejection.content, text, typed_answer=True, reply=asked, tool_call_id=call.id
            )
        return value

    def final(
        self, llm: Model, messages: list[Message], options: dict[str, Any]
    ) -> ObjectResult[Any]:
        """The answer asked for at a limit: `generate_object` over `messages`, without
        re-asks (the run is over); OutputParserError when it does not fit."""
        try:
            result: ObjectResult[Any] = generate_object(
                llm, messages, self.shape.output_type, max_retries=0, include_raw=True, **options
            )
        except OutputValidationError as error:
            raise _not_fitting(error) from None
        return result

    async def afinal(
        self, llm: Model, messages: list[Message], options: dict[str, Any]
    ) -> ObjectResult[Any]:
        """Async twin of `final`."""
        try:
            result: ObjectResult[Any] = await agenerate_object(
                llm, messages, self.shape.output_type, max_retries=0, include_raw=True, **options
            )
        except OutputValidationError as error:
            raise _not_fitting(error) from None
        return result


def final_call(reply: Message) -> ToolCall | None:
    """The reply's call of the final-answer tool, if it makes one."""
    return next((c for c in reply.tool_calls if c.function.name == FINAL_ANSWER_TOOL), None)


def _not_fitting(error: OutputValidationError) -> OutputParserError:
    [rejected] = error.rejected
    problems = "; ".join(rejected.problems)
    return OutputParserError(f"Your final answer did not fit the schema: {problems}", rejected.text)
