import pytest

from chainkit import chains
from chainkit.agents import Executor, ToolCallingAgent
from chainkit.llms import FakeLLM
from chainkit.schema import FunctionCall, Message, ToolCall
from chainkit.tools import Tool, ToolError
from tests.support.stub_tools import Echo


def arguments_error(arguments):
    with pytest.raises(ToolError) as caught:
        Echo().input_from_arguments(arguments)
    return str(caught.value)


def test_input_is_taken_from_the_input_property():
    assert Echo().input_from_arguments('{"input": "北京"}') == "北京"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            '{"input": "北',
            "Invalid arguments for tool echo: not valid JSON at position 10 "
            '(Unterminated string starting at), near \'{"input": "北\'',
        ),
        ("[" * 100_000, "Invalid arguments for tool echo: not valid JSON: nested too deeply"),
        ('{"text": "x"}', 'expected {"input": "<text>"}, got \'{"text": "x"}\''),
        ("", 'expected {"input": "<text>"}, got \'\''),
    ],
)
def test_arguments_that_are_not_an_input_object_are_a_tool_error(arguments, message):
    assert message in arguments_error(arguments)


def test_deeply_nested_arguments_become_an_observation_not_a_crash():
    nested = ToolCall("c1", FunctionCall("echo", "[" * 100_000))
    fake = FakeLLM([Message.assistant("", [nested]), "sorry"])
    outputs = chains.call(
        Executor(ToolCallingAgent(fake, [Echo()]), return_intermediate_steps=True), {"input": "q"}
    )
    assert outputs["output"] == "sorry"
    assert outputs["intermediate_steps"][0].observation == (
        "Invalid arguments for tool echo: not valid JSON: nested too deeply"
    )


def test_parameters_are_a_fresh_copy_per_call() -> None:
    class A(Tool):
        name = "a"

    first = A().parameters
    first["properties"]["input"]["description"] = "changed"
    assert A().parameters["properties"]["input"]["description"] != "changed"
