"""A tool-calling step as one JSON object, for ToolCallingAgent(constrain=...): the JSON
schema a server constrains the reply to, the words that tell the model about it, and reading
the reply back.

A step is `{"tool": <name>, "arguments": {...}}`, the arguments fitting that tool's schema,
or `{"answer": "<text>"}`. The request field named "response_format" (OpenAI, vLLM,
llama.cpp's `llama-server`) takes the schema in OpenAI's `json_schema` form; any other field
(llama-server's `json_schema`, vLLM's `structured_outputs.json`) takes the schema itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chainkit.agents.errors import OutputParserError
from chainkit.schema import AgentAction, AgentFinish, Message, ToolInfo
from chainkit.tools import ToolError, Toolset

__all__ = ["read_json_step", "step_prompt", "step_schema_value"]

_ANSWER = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def step_schema_value(field: str, tools: Sequence[ToolInfo]) -> dict[str, Any]:
    """What goes in the request field `field`: the schema of a step calling one of `tools`
    or answering (only answering, without tools)."""
    calls = [
        {
            "type": "object",
            "properties": {"tool": {"const": info.name}, "arguments": info.parameters},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for info in tools
    ]
    schema = {"anyOf": [*calls, _ANSWER]} if calls else _ANSWER
    if field.rpartition(".")[2] == "response_format":
        return {"type": "json_schema", "json_schema": {"name": "agent_step", "schema": schema}}
    return schema


def step_prompt(tools: Sequence[ToolInfo]) -> str:
    """Tells the model the shape of its reply, and the tools with their arguments' schemas."""
    if not tools:
        return 'Reply with one JSON object: {"answer": "<your final answer>"}.'
    listed = "\n".join(
        f"- {info.name}: {info.description} Arguments: {json.dumps(info.parameters)}"
        for info in tools
    )
    return (
        'Reply with one JSON object: {"tool": "<name>", "arguments": {...}} to call a tool, '
        'or {"answer": "<your final answer>"} to answer. The tools:\n' + listed
    )


def read_json_step(reply: Message, toolset: Toolset) -> list[AgentAction] | AgentFinish:
    """The step a reply holds; OutputParserError, saying what to fix, for one that is no step
    (a server that did not constrain it) or whose arguments the tool refuses."""
    try:
        value = json.loads(reply.content)
    except ValueError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("answer"), str):
        return AgentFinish({"output": value["answer"]}, reply.content)
    if not isinstance(value, dict):
        value = {}
    name, arguments = value.get("tool"), value.get("arguments")
    tool = toolset.find(name) if isinstance(name, str) else None
    if tool is None or not isinstance(arguments, dict):
        raise OutputParserError(
            'Reply with one JSON object: {"tool": "<name>", "arguments": {...}} naming one of '
            f'the tools ({", ".join(toolset.names)}), or {{"answer": "..."}}.',
            reply.content,
        )
    try:
        tool_input = tool.input_from_arguments(json.dumps(arguments))
    except ToolError as error:
        raise OutputParserError(str(error), reply.content) from None
    return [AgentAction(tool.name, tool_input, reply.content, message_log=[reply])]
