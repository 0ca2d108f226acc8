"""How a model is asked for a typed result, one class per way (see `llms.generate_object`).

- `json_schema`: OpenAI's `response_format={"type": "json_schema", ...}`, strict when the
  schema fits strict mode; servers that constrain decoding (vLLM, llama.cpp, Ollama) take it;
- `tool`: one tool whose parameters are the schema (strict when the schema fits strict mode),
  and `tool_choice` naming it;
- `json_mode`: `response_format={"type": "json_object"}`, the schema in the instructions;
- `prompted`: the schema in the instructions only; any model, the reply read tolerantly.

Each says what to add to a request and where the reply's JSON is, and how to tell the model
that its reply did not validate; `response_format_for` is the one home of the response format.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar, Final, Literal

from chainkit._jsonschema.output import INSTRUCTIONS, OutputShape, instructions_for
from chainkit.schema import Message, ToolCall, ToolInfo

StrategyName = Literal["json_schema", "tool", "json_mode", "prompted"]
"""The ways to ask a model for a typed result."""

STRATEGY_NAMES: Final[tuple[StrategyName, ...]] = ("json_schema", "tool", "json_mode", "prompted")
DEFAULT_STRATEGIES: Final[tuple[StrategyName, ...]] = ("prompted",)
"""What a model that lists no `output_strategies` takes."""


def response_format_for(shape: OutputShape) -> dict[str, Any]:
    """The `response_format` option that asks for `shape`, strict when the schema allows."""
    return {
        "type": "json_schema",
        "json_schema": {"name": shape.name, "schema": shape.schema, "strict": shape.strict},
    }


def with_instructions(
    messages: Sequence[Message], shape: OutputShape, instructions: str = INSTRUCTIONS
) -> list[Message]:
    """`messages` with the schema `instructions` (a template of `{schema}`) in the system
    message (one added first when there is none: many chat templates take a system message
    only there)."""
    text = instructions_for(shape, instructions)
    if messages and messages[0].role == "system":
        first = Message.system(f"{messages[0].content}\n\n{text}")
        return [first, *messages[1:]]
    return [Message.system(text), *messages]


def _rejection_text(problems: str) -> str:
    return (
        f"Your answer did not fit the schema: {problems}. Answer again with the whole JSON "
        "object, corrected."
    )


def reading_rejection(reply: Message, problem: str) -> list[Message]:
    """What follows a reply an output parser could not read: the reply, then why."""
    return [
        reply,
        Message.user(f"Your answer could not be read: {problem}. Answer again, corrected."),
    ]


class OutputStrategy(ABC):
    """One way to ask for a typed result."""

    name: ClassVar[StrategyName]
    fields: ClassVar[tuple[str, ...]]
    """The request fields the strategy adds: a server that does not have the strategy
    refuses one of them (`ModelStatusError.refuses`)."""

    def messages(self, messages: Sequence[Message], shape: OutputShape) -> list[Message]:
        """The messages to send."""
        return list(messages)

    @abstractmethod
    def options(self, shape: OutputShape) -> dict[str, Any]:
        """Call options to add to the caller's."""

    def tools(self, shape: OutputShape) -> list[ToolInfo] | None:
        """Tools to offer."""
        return None

    def reply_text(self, reply: Message, shape: OutputShape) -> str:
        """The text of `reply` that holds the JSON object."""
        return reply.content

    def rejection(self, reply: Message, problems: str) -> list[Message]:
        """What follows a reply that did not validate in the conversation: the reply, then
        what was wrong with it."""
        return [reply, Message.user(_rejection_text(problems))]


class JsonSchemaStrategy(OutputStrategy):
    name = "json_schema"
    fields = ("response_format",)

    def options(self, shape: OutputShape) -> dict[str, Any]:
        return {"response_format": response_format_for(shape)}


class ToolStrategy(OutputStrategy):
    name = "tool"
    fields = ("tools", "tool_choice")

    def options(self, shape: OutputShape) -> dict[str, Any]:
        return {"tool_choice": {"type": "function", "function": {"name": shape.name}}}

    def tools(self, shape: OutputShape) -> list[ToolInfo]:
        description = shape.spec.description or f"Give the answer as a {shape.name}."
        return [ToolInfo(shape.name, description, shape.schema, strict=shape.strict)]

    def reply_text(self, reply: Message, shape: OutputShape) -> str:
        call = _call_of(reply, shape.name)
        return reply.content if call is None else call.function.arguments

    def rejection(self, reply: Message, problems: str) -> list[Message]:
        if not reply.tool_calls:
            return super().rejection(reply, problems)
        # Every call needs its answer before the conversation may go on.
        answers = [Message.tool(_rejection_text(problems), call.id) for call in reply.tool_calls]
        return [reply, *answers]


def _call_of(reply: Message, name: str) -> ToolCall | None:
    named = [call for call in reply.tool_calls if call.function.name == name]
    calls = named or reply.tool_calls
    return calls[0] if calls else None


class JsonModeStrategy(OutputStrategy):
    name = "json_mode"
    fields = ("response_format",)

    def messages(self, messages: Sequence[Message], shape: OutputShape) -> list[Message]:
        return with_instructions(messages, shape)

    def options(self, shape: OutputShape) -> dict[str, Any]:
        # The schema rides along: llama.cpp's server constrains a json_object reply to it,
        # where otherwise a small model may answer with any JSON (the schema itself, often).
        return {"response_format": {"type": "json_object", "schema": shape.schema}}


class PromptedStrategy(OutputStrategy):
    name = "prompted"
    fields = ()

    def messages(self, messages: Sequence[Message], shape: OutputShape) -> list[Message]:
        return with_instructions(messages, shape)

    def options(self, shape: OutputShape) -> dict[str, Any]:
        return {}


STRATEGIES: Final[dict[StrategyName, OutputStrategy]] = {
    strategy.name: strategy
    for strategy in (JsonSchemaStrategy(), ToolStrategy(), JsonModeStrategy(), PromptedStrategy())
}


def output_strategies_of(model: object) -> tuple[StrategyName, ...]:
    """The strategies `model` takes, first choice first: its `output_strategies`, else
    prompted only. A model made of others (`llms.Fallbacks`) lists what each of them takes."""
    listed: tuple[StrategyName, ...] = getattr(model, "output_strategies", DEFAULT_STRATEGIES)
    return listed or DEFAULT_STRATEGIES


def common_strategies(models: Sequence[object]) -> tuple[StrategyName, ...]:
    """The strategies every one of `models` takes, in the first one's order: what a model
    made of them takes, since any of them may answer."""
    first, *others = (output_strategies_of(model) for model in models)
    common = tuple(name for name in first if all(name in listed for listed in others))
    return common or DEFAULT_STRATEGIES


FINAL_ANSWER_TOOL: Final = "final_answer"
"""The name of the tool an agent with a typed answer ends its run by calling (see
`final_answer_tool`)."""


def final_answer_tool(shape: OutputShape) -> ToolInfo:
    """The tool strategy's tool for an agent, offered beside its own tools: the model ends
    the run by calling it, its arguments the answer."""
    tool = ToolStrategy().tools(shape)[0]
    description = f"{tool.description} Call it once you know the answer: it ends the run."
    return replace(tool, name=FINAL_ANSWER_TOOL, description=description)
