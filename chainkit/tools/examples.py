"""Tools' examples (`Tool.examples`, `tools.ToolExample`): the check that each fits its tool's
arguments, made when the tool joins a Toolset, and the arguments and Action Input it stands for."""

from __future__ import annotations

import json
from typing import Any

from chainkit._text import described
from chainkit.tools.base import Tool, ToolExample
from chainkit.tools.errors import ToolConfigError, ToolError, ToolTypeError


def takes_text(tool: Tool) -> bool:
    """Whether `tool` takes one string, `input` (a plain Tool's arguments)."""
    return type(tool).parameters is Tool.parameters


def example_arguments(example: ToolExample) -> dict[str, Any]:
    """The JSON object of arguments `example` calls `tool` with."""
    if isinstance(example.input, str):
        return {"input": example.input}
    return dict(example.input)


def action_input(tool: Tool, example: ToolExample) -> str:
    """What a MRKL reply writes after `Action Input:` for `example`: a text tool's text, or
    the arguments as JSON."""
    arguments = example_arguments(example)
    if takes_text(tool):
        return str(arguments.get("input", ""))
    return json.dumps(arguments, ensure_ascii=False)


def check_examples(tool: Tool) -> None:
    """Raises, naming the tool and what is wrong, unless each of `tool.examples` is a
    ToolExample whose input fits the tool's arguments (checked as a model's call is)."""
    examples = getattr(tool, "examples", ())
    if not isinstance(examples, tuple | list):
        raise ToolTypeError(
            f"tool {tool.name!r}: examples must be a list of tools.ToolExample, got "
            f"{described(examples)}"
        )
    for index, example in enumerate(examples):
        if not isinstance(example, ToolExample):
            raise ToolTypeError(
                f"tool {tool.name!r}: example {index} must be a tools.ToolExample, got "
                f"{described(example)}"
            )
        if isinstance(example.input, str) and not takes_text(tool):
            raise ToolConfigError(
                f"tool {tool.name!r}: example {index} gives text, {example.input!r:.100}, but "
                "the tool takes a JSON object of arguments: give a dict"
            )
        try:
            text = json.dumps(example_arguments(example), ensure_ascii=False)
            tool.input_from_arguments(text)
        except (TypeError, ValueError) as error:
            raise ToolConfigError(
                f"tool {tool.name!r}: example {index} has arguments with no JSON form: {error}"
            ) from None
        except ToolError as error:
            raise ToolConfigError(
                f"tool {tool.name!r}: example {index} does not fit: {error}"
            ) from None
