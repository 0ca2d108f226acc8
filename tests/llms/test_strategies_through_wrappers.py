"""Which strategy `llms.generate_object` takes through a model made of others (`Fallbacks`),
and what a server's refusal of a request field costs: one answer, not a round of retries,
remembered for the model's later calls. The same rule tells a constrained agent that its
grammar was refused. Real HTTP to the loopback server throughout."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from chainkit import agents, llms
from chainkit.llms import FakeLLM, Fallbacks, ModelStatusError, OfflineModel
from chainkit.llms.openai.chat import OpenAI
from chainkit.tools.builtin import Calculator
from tests.support.modes import Mode
from tests.support.openai_server import Call, Fault, OpenAIServer, Reply

# What llama-cpp-python's server answers a json_schema response_format with.
LLAMA_CPP_REFUSAL = "response_format.type: Input should be 'text' or 'json_object'"


@dataclass
class City:
    name: str
    people: int


CITY = {"name": "Oslo", "people": 700000}


def formats(server: OpenAIServer) -> list[Any]:
    return [
        request.body.get("response_format", {}).get("type") for request in server.chat_requests()
    ]


def test_fallbacks_of_openai_models_ask_with_a_json_schema(
    mode: Mode, openai_server: OpenAIServer, make_openai: Callable[..., OpenAI]
) -> None:
    both = Fallbacks([make_openai(), make_openai(model="backup")])
    assert both.output_strategies == ("json_schema", "tool", "json_mode", "prompted")
    openai_server.push(Reply.of_json(CITY))
    result = mode.generate_object(both, "Oslo?", City, include_raw=True)
    assert (result.value, result.strategy) == (City("Oslo", 700000), "json_schema")
    assert formats(openai_server) == ["json_schema"]


def test_fallbacks_take_what_every_model_of_them_takes(make_openai: Callable[..., OpenAI]) -> None:
    assert Fallbacks([make_openai(), OfflineModel()]).output_strategies == (
        "json_schema",
        "prompted",
    )
    assert Fallbacks([make_openai(), FakeLLM([])]).output_strategies == ("prompted",)
    inner = Fallbacks([OfflineModel(), make_openai()])
    assert Fallbacks([make_openai(), inner]).output_strategies == ("json_schema", "prompted")


@pytest.mark.parametrize("status", [500, 400, 422])
def test_a_refused_field_is_known_after_one_answer_and_remembered(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI, status: int
) -> None:
    openai_server.fail(Fault.http(status, LLAMA_CPP_REFUSAL))
    openai_server.push(Reply.of_json(CITY), Reply.of_json(CITY))
    first = mode.generate_object(openai_llm, "Oslo?", City, include_raw=True)
    # One refused request (not five attempts at it), then the next strategy.
    assert first.strategy == "tool"
    refused, answered = openai_server.chat_requests()
    assert "response_format" in refused.body and "tools" in answered.body
    second = mode.generate_object(openai_llm, "Oslo?", City, include_raw=True)
    assert second.strategy == "tool"
    assert "tools" in openai_server.chat_requests()[-1].body
    assert len(openai_server.chat_requests()) == 3


def test_a_refusal_through_fallbacks_moves_to_the_next_strategy_at_once(
    mode: Mode, openai_server: OpenAIServer, make_openai: Callable[..., OpenAI]
) -> None:
    both = Fallbacks([make_openai(), make_openai(model="backup")])
    openai_server.fail(Fault.http(500, LLAMA_CPP_REFUSAL))
    openai_server.push(Reply(tool_calls=[Call("City", json.dumps(CITY))]))
    result = mode.generate_object(both, "Oslo?", City, include_raw=True)
    assert (result.value, result.strategy) == (City("Oslo", 700000), "tool")
    sent = openai_server.chat_requests()
    assert [request.body["model"] for request in sent] == ["loopback-model", "loopback-model"]
    assert "tools" in sent[1].body and "response_format" not in sent[1].body


def test_a_500_naming_no_field_of_the_request_is_still_retried(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.fail(Fault.http(500, "out of memory"), Fault.http(500, "response format broke"))
    openai_server.push(Reply.of_json(CITY))
    assert llms.generate_object(openai_llm, "Oslo?", City) == City("Oslo", 700000)
    assert formats(openai_server) == ["json_schema"] * 3


def test_a_refusal_of_a_field_the_caller_added_is_not_retried_either(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.fail(Fault.http(500, "unknown field: top_k"))
    with pytest.raises(ModelStatusError) as raised:
        llms.call(openai_llm, "hi", extra_body={"top_k": 5})
    assert raised.value.refused_field == "top_k" and raised.value.attempts == 1
    assert len(openai_server.chat_requests()) == 1


def test_a_constrained_agent_hears_of_a_500_refusing_its_grammar_after_one_answer(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.fail(Fault.http(500, "grammar: unknown field"))
    agent = agents.OneShotAgent(openai_llm, [Calculator()], constrain="grammar")
    with pytest.raises(agents.ConstraintRefusedError, match="constrain='grammar'"):
        mode.run(agents.Executor(agent), "q")
    assert len(openai_server.chat_requests()) == 1


def test_a_400_naming_something_else_is_no_refusal_of_the_grammar(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.fail(Fault.http(400, "messages: too long for the context"))
    agent = agents.OneShotAgent(openai_llm, [Calculator()], constrain="grammar")
    with pytest.raises(ModelStatusError) as raised:
        mode.run(agents.Executor(agent), "q")
    assert not isinstance(raised.value, agents.ConstraintRefusedError)


@pytest.mark.parametrize(
    ("message", "field", "refuses"),
    [
        ("response_format.type: Input should be 'json_object'", "response_format", True),
        (
            "Unrecognized request argument supplied: structured_outputs",
            "structured_outputs.grammar",
            True,
        ),
        ("tools are not supported by this model", "tools", True),
        ("tool_choice is not supported", "tools", False),
        ("the prompt is too long", "tools", False),
        ("my_response_format_x is wrong", "response_format", False),
    ],
)
def test_the_one_rule_for_a_refused_field(message: str, field: str, refuses: bool) -> None:
    assert ModelStatusError(500, message).refuses(field) is refuses
    assert ModelStatusError(429, message).refuses(field) is False


def test_fallbacks_told_to_fall_back_on_refusals_move_on_when_every_server_refused(
    mode: Mode, openai_server: OpenAIServer, make_openai: Callable[..., OpenAI]
) -> None:
    both = Fallbacks([make_openai(), make_openai(model="backup")], fall_back_on=(llms.ModelError,))
    openai_server.fail(Fault.http(500, LLAMA_CPP_REFUSAL), Fault.http(500, LLAMA_CPP_REFUSAL))
    openai_server.push(Reply(tool_calls=[Call("City", json.dumps(CITY))]))
    result = mode.generate_object(both, "Oslo?", City, include_raw=True)
    assert (result.value, result.strategy) == (City("Oslo", 700000), "tool")
    assert len(openai_server.chat_requests()) == 3
