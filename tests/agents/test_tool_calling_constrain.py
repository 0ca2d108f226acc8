"""ToolCallingAgent(constrain=...): each reply is constrained to one JSON step by a schema in
the field the server takes; the tools are described in a system message, not offered
natively; the reply is read back as the call or answer it spells."""

from __future__ import annotations

import pytest

from chainkit import agents, chains, tools
from chainkit.agents import ConstraintRefusedError
from tests.support.openai_server import Fault
from tests.support.stub_tools import Echo


@tools.tool
def add(a: int, b: int) -> int:
    """Adds two whole numbers."""
    return a + b


def test_a_step_is_one_json_object_under_the_schema(mode, openai_server, openai_llm):
    openai_server.push(
        '{"tool": "add", "arguments": {"a": 17, "b": 25}}',
        '{"tool": "echo", "arguments": {"input": "hi"}}',
        '{"answer": "42"}',
    )
    echo = Echo()
    agent = agents.ToolCallingAgent(openai_llm, [add, echo], constrain="response_format")
    assert mode.run(agents.Executor(agent), "add 17 and 25") == "42"
    assert echo.inputs == ["hi"]
    first, _, third = (request.body for request in openai_server.chat_requests())
    assert "tools" not in first
    assert first["response_format"]["type"] == "json_schema"
    schema = first["response_format"]["json_schema"]["schema"]
    call_add, call_echo, answer = schema["anyOf"]
    assert call_add["properties"] == {"tool": {"const": "add"}, "arguments": add.parameters}
    assert call_echo["properties"]["tool"] == {"const": "echo"}
    assert answer["required"] == ["answer"]
    assert "add: Adds two whole numbers." in first["messages"][0]["content"]
    # The reply goes back as the model's text, the result as a user message.
    assert third["messages"][-4:-2] == [
        {"role": "assistant", "content": '{"tool": "add", "arguments": {"a": 17, "b": 25}}'},
        {"role": "user", "content": "add: 42"},
    ]


def test_another_field_takes_the_schema_itself(mode, openai_server, openai_llm):
    openai_server.push('{"answer": "fine"}')
    agent = agents.ToolCallingAgent(openai_llm, [add], constrain="structured_outputs.json")
    assert mode.run(agents.Executor(agent), "how are you") == "fine"
    (body,) = (request.body for request in openai_server.chat_requests())
    assert body["structured_outputs"]["json"]["anyOf"][0]["properties"]["tool"] == {"const": "add"}


def test_the_answer_asked_for_at_a_limit_is_constrained_to_an_answer(openai_server, openai_llm):
    openai_server.push('{"tool": "add", "arguments": {"a": 1, "b": 2}}', '{"answer": "3"}')
    agent = agents.ToolCallingAgent(openai_llm, [add], constrain="json_schema")
    executor = agents.Executor(agent, max_iterations=1, early_stopping_method="generate")
    assert chains.run(executor, "1 + 2") == "3"
    final = openai_server.chat_requests()[-1].body
    assert final["json_schema"]["required"] == ["answer"]
    assert "anyOf" not in final["json_schema"]


@pytest.mark.parametrize(
    "reply", ['{"tool": "nope", "arguments": {}}', '{"tool": "add"}', "[1]", "add 1 and 2"]
)
def test_a_reply_that_is_no_step_goes_back_to_the_model(openai_server, openai_llm, reply):
    openai_server.push(reply, '{"answer": "ok"}')
    agent = agents.ToolCallingAgent(openai_llm, [add], constrain="response_format")
    executor = agents.Executor(agent, error_handler=agents.ParserErrorHandler())
    assert chains.run(executor, "q") == "ok"
    retry = openai_server.chat_requests()[1].body["messages"][-1]["content"]
    assert "naming one of the tools (add)" in retry


def test_arguments_the_tool_refuses_go_back_to_the_model(openai_server, openai_llm):
    openai_server.push('{"tool": "add", "arguments": {"a": "x"}}', '{"answer": "ok"}')
    agent = agents.ToolCallingAgent(openai_llm, [add], constrain="response_format")
    executor = agents.Executor(agent, error_handler=agents.ParserErrorHandler())
    assert chains.run(executor, "q") == "ok"
    retry = openai_server.chat_requests()[1].body["messages"][-1]["content"]
    assert retry.endswith('tool add: a: expected integer, got "x"; b: missing required field')


def test_a_server_that_refuses_the_schema_gets_an_error_naming_it(mode, openai_server, openai_llm):
    openai_server.fail(Fault.http(400, "Unrecognized request argument supplied: json_schema"))
    agent = agents.ToolCallingAgent(openai_llm, [add], constrain="json_schema")
    with pytest.raises(ConstraintRefusedError, match="constrain='json_schema'"):
        mode.run(agents.Executor(agent), "q")
