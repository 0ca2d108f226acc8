"""The tools' examples (`Tool.examples`) an agent shows its model, within a budget of prompt
tokens: as worked MRKL steps in a OneShotAgent's prompt, as example arguments in the
description a ToolCallingAgent sends with each tool. Only the tools offered are given: with a
tool retriever, the examples of the tools it chose."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from chainkit._text import described
from chainkit._tokens import text_tokens
from chainkit.agents.errors import AgentConfigError, AgentTypeError
from chainkit.schema import ToolInfo
from chainkit.tools import Tool, ToolExample
from chainkit.tools.examples import action_input, example_arguments

DEFAULT_EXAMPLE_TOKENS = 400
"""The prompt tokens (the project's estimate, `_tokens.text_tokens`) the examples may take by
default: about ten MRKL examples of a short input, observation and answer."""

MRKL_EXAMPLES_HEADER = "\n\nExamples of using the tools:"


def check_example_tokens(value: object) -> int:
    """`value`, the prompt tokens the tools' examples may take, once checked."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise AgentTypeError(
            f"example_tokens must be a whole number of tokens, 0 or more, got {described(value)}"
        )
    if value < 0:
        raise AgentConfigError(f"example_tokens must be 0 or more, got {value}")
    return value


def chosen_examples(
    tools: Sequence[Tool], budget: int, render: Callable[[Tool, ToolExample], str]
) -> list[tuple[Tool, str]]:
    """Each tool's examples rendered, those that fit in `budget` tokens together: every tool's
    first example, in tool order, then every tool's second, and so on, so that each tool gets
    one before any gets two; the first that does not fit, and all after it, are left out."""
    chosen = []
    left = budget
    for tool, example in _by_rank(tools):
        text = render(tool, example)
        left -= text_tokens(text)
        if left < 0:
            break
        chosen.append((tool, text))
    return chosen


def _by_rank(tools: Sequence[Tool]) -> Iterator[tuple[Tool, ToolExample]]:
    most = max((len(tool.examples) for tool in tools), default=0)
    for rank in range(most):
        for tool in tools:
            if rank < len(tool.examples):
                yield tool, tool.examples[rank]


def mrkl_example(tool: Tool, example: ToolExample) -> str:
    """`example` as the MRKL steps a model writes for it (the format `_mrkl` parses)."""
    lines = [
        f"Thought: I should use {tool.name}.",
        f"Action: {tool.name}",
        f"Action Input: {action_input(tool, example)}",
    ]
    if example.observation is not None:
        lines.append(f"Observation: {example.observation}")
    if example.answer is not None:
        lines += ["Thought: I now know the final answer", f"Final Answer: {example.answer}"]
    return "\n".join(lines)


def mrkl_examples(tools: Sequence[Tool], budget: int) -> str:
    """The examples of `tools` a MRKL prompt lists after the tools' descriptions; '' when
    they have none (or none fits)."""
    chosen = chosen_examples(tools, budget, mrkl_example)
    if not chosen:
        return ""
    return MRKL_EXAMPLES_HEADER + "".join(f"\n\n{text}" for _, text in chosen)


def example_call(tool: Tool, example: ToolExample) -> str:
    """`example` as the JSON arguments a tool-calling model sends."""
    return json.dumps(example_arguments(example), ensure_ascii=False)


def with_examples(infos: Sequence[ToolInfo], tools: Sequence[Tool], budget: int) -> list[ToolInfo]:
    """`infos` (of `tools`, in the same order) with the examples that fit in `budget` added
    to their descriptions; unchanged when the tools have none."""
    calls: dict[str, list[str]] = {}
    for tool, text in chosen_examples(tools, budget, example_call):
        calls.setdefault(tool.name, []).append(text)
    if not calls:
        return list(infos)
    return [
        replace(info, description=_described_with(info.description, calls[info.name]))
        if info.name in calls
        else info
        for info in infos
    ]


def _described_with(description: str, calls: Sequence[str]) -> str:
    return description + "\nExample arguments:" + "".join(f"\n{call}" for call in calls)
