"""Tools' examples: checked against the tool's arguments when the tool joins a Toolset."""

from __future__ import annotations

from typing import Any

import pytest

from chainkit import tools
from chainkit.tools.errors import ToolConfigError, ToolTypeError
from chainkit.tools.examples import action_input


class Echo(tools.Tool):
    name = "echo"
    description = "Says its input back."
    examples = (tools.ToolExample("hello", "hello", "It says hello."),)

    def call(self, input: str) -> str:
        return input


@tools.tool(examples=[tools.ToolExample({"a": 2, "b": 3}, "5")])
def add(a: int, b: int = 0) -> int:
    """Adds two numbers."""
    return a + b


def test_a_tool_has_no_examples_unless_given_some() -> None:
    assert tools.Tool.examples == ()
    assert tools.StructuredTool(lambda x: x, name="f", description="d").examples == ()


def test_examples_that_fit_their_tools_are_taken() -> None:
    assert tools.Toolset([Echo(), add]).names == ["echo", "add"]
    assert add.examples == (tools.ToolExample({"a": 2, "b": 3}, "5"),)


@pytest.mark.parametrize(
    ("arguments", "wrong"),
    [
        ({"a": "two"}, "a: expected integer"),
        ({"b": 1}, "a"),
        ({"a": 1, "c": 2}, "c"),
    ],
)
def test_an_example_that_does_not_fit_its_schema_is_refused_naming_the_tool(
    arguments: dict[str, Any], wrong: str
) -> None:
    @tools.tool(name="adder", examples=[tools.ToolExample(arguments)])
    def adder(a: int, b: int = 0) -> int:
        """Adds."""
        return a + b

    with pytest.raises(ToolConfigError, match="tool 'adder': example 0 does not fit") as caught:
        tools.Toolset([adder])
    assert wrong in str(caught.value)


def test_text_given_to_a_typed_tool_is_refused() -> None:
    @tools.tool(name="adder", examples=[tools.ToolExample("2 + 3")])
    def adder(a: int) -> int:
        """Adds."""
        return a

    with pytest.raises(ToolConfigError, match=r"tool 'adder': example 0 gives text.*give a dict"):
        tools.Toolset([adder])


def test_a_text_tool_takes_its_input_as_a_dict_too_but_no_other_field() -> None:
    class Typed(Echo):
        examples = (tools.ToolExample({"input": "hi"}),)

    tools.Toolset([Typed()])

    class Wrong(Echo):
        examples = (tools.ToolExample({"text": "hi"}),)

    with pytest.raises(ToolConfigError, match="tool 'echo': example 0 does not fit"):
        tools.Toolset([Wrong()])


def test_examples_of_the_wrong_type_are_refused_naming_the_tool() -> None:
    class NotExamples(Echo):
        examples = ("hello",)  # type: ignore[assignment]

    with pytest.raises(ToolTypeError, match=r"tool 'echo': example 0 must be a tools\.ToolExample"):
        tools.Toolset([NotExamples()])
    with pytest.raises(ToolTypeError, match="input must be text or a dict"):
        tools.ToolExample(5)  # type: ignore[arg-type]
    with pytest.raises(ToolTypeError, match="answer must be text or None"):
        tools.ToolExample("x", answer=3)  # type: ignore[arg-type]


def test_arguments_with_no_json_form_are_refused_naming_the_tool() -> None:
    @tools.tool(name="adder", examples=[tools.ToolExample({"a": object()})])
    def adder(a: int) -> int:
        """Adds."""
        return a

    with pytest.raises(ToolConfigError, match="tool 'adder': example 0 has arguments with no"):
        tools.Toolset([adder])


def test_the_action_input_of_an_example_is_a_text_tools_text_or_the_arguments_json() -> None:
    assert action_input(Echo(), tools.ToolExample("héllo")) == "héllo"
    assert action_input(Echo(), tools.ToolExample({"input": "hi"})) == "hi"
    assert action_input(add, tools.ToolExample({"a": 2, "b": 3})) == '{"a": 2, "b": 3}'
