"""OfflineModel: a deterministic stand-in for an LLM, so `chainkit run` works with no network.

It is a demo and default model, not a test double. Given a MRKL prompt (or native tools), it
picks the tool whose name and description best match the question, calls it with the relevant
input (the arithmetic expression for a calculator, the question otherwise), and answers with
the observation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chainkit.llms._lexical import MATH_TOKENS, best_match, find_expression, tokens
from chainkit.llms._streaming import stream_text
from chainkit.llms.model import BaseModel, ModelRequest
from chainkit.schema import FunctionCall, Message, ToolCall, ToolInfo


class OfflineModel(BaseModel):
    """Answers MRKL prompts and native tool calls by lexical tool matching."""

    def __repr__(self) -> str:
        return "OfflineModel()"

    def _generate(self, request: ModelRequest) -> Message:
        messages, tools = request.messages, request.tools
        reply = (
            _native_reply(messages, tools) if tools else Message.assistant(_mrkl_reply(messages))
        )
        if request.streaming_func is not None:
            stream_text(reply.content, request.streaming_func, 8)
        return reply


def _last_user_text(messages: Sequence[Message]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            return message.content
    return ""


def _between(text: str, start: str, end: str) -> str | None:
    """The text after the last `start`, up to the next `end` (or the end of text)."""
    index = text.rfind(start)
    if index < 0:
        return None
    rest = text[index + len(start) :]
    stop = rest.find(end)
    return (rest if stop < 0 else rest[:stop]).strip()


def _choose(question: str, candidates: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The tool to call and its input, or None when no tool matches the question."""
    index, _ = best_match(question, candidates)
    if index < 0:
        return None
    name, description = candidates[index]
    expression = find_expression(question)
    if expression is not None and MATH_TOKENS.intersection(tokens(f"{name} {description}")):
        return name, expression
    return name, question


def _prompt_tools(prompt: str) -> list[tuple[str, str]]:
    """(name, description) pairs of the tools a MRKL prompt lists as `name: description`."""
    listed: set[str] = set()
    for line in prompt.splitlines():
        open_at = line.find("[")
        close_at = line.rfind("]")
        if 0 <= open_at < close_at:
            listed.update(name.strip() for name in line[open_at + 1 : close_at].split(","))
    found: list[tuple[str, str]] = []
    for line in prompt.splitlines():
        name, sep, description = line.partition(": ")
        if sep and name.strip() in listed:
            found.append((name.strip(), description.strip()))
    return found


def _mrkl_reply(messages: Sequence[Message]) -> str:
    prompt = _last_user_text(messages)
    # The format instructions show a Question and an Observation too: look past them.
    asked_at = max(prompt.rfind("Question:"), 0)
    # Without a "Question:" line there is no telling the question from the instructions.
    question = _between(prompt, "Question:", "\nThought:") or ""
    observation = _between(prompt[asked_at:], "\nObservation:", "\nThought:")
    if observation is not None:
        return f" I now know the final answer.\nFinal Answer: {observation}"
    choice = _choose(question, _prompt_tools(prompt)) if question else None
    if choice is None:
        return (
            " None of the tools matches this question.\nFinal Answer: The offline model can "
            "only answer by calling a tool, and none matches this question."
        )
    name, tool_input = choice
    return f" I should use {name}.\nAction: {name}\nAction Input: {tool_input}"


def _native_reply(messages: Sequence[Message], tools: Sequence[ToolInfo]) -> Message:
    if messages and messages[-1].role == "tool":
        return Message.assistant(messages[-1].content)
    question = _last_user_text(messages)
    choice = _choose(question, [(t.name, t.description) for t in tools])
    if choice is None:
        return Message.assistant("The offline model found no tool matching this question.")
    name, tool_input = choice
    info = next(t for t in tools if t.name == name)
    field = _text_field(info.parameters)
    arguments = {field: tool_input} if field is not None else {}
    call = ToolCall("call_offline_0", FunctionCall(name, json.dumps(arguments, ensure_ascii=False)))
    return Message.assistant("", [call])


def _text_field(parameters: dict[str, Any]) -> str | None:
    """The argument to put the question in: the only one, or the first required string."""
    properties: dict[str, Any] = parameters.get("properties") or {}
    if len(properties) == 1:
        return next(iter(properties))
    for name in parameters.get("required") or ():
        if (properties.get(name) or {}).get("type") == "string":
            return str(name)
    return None
