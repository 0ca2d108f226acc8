"""Typed results from a model (`llms.generate_object`): every strategy over real HTTP to the
loopback server, re-asking with the validation error, refusals, partial objects, and each
kind of output type."""

from __future__ import annotations

import enum
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

import pydantic
import pytest

from chainkit import llms
from chainkit.llms.openai.chat import OpenAI
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.event_recorder import EventRecorder
from tests.support.modes import Mode
from tests.support.openai_server import DEFAULT_USAGE, Call, Fault, OpenAIServer, Reply


@dataclass
class Item:
    name: str
    price: float


@dataclass
class Order:
    items: list[Item]
    status: Literal["open", "closed"]


@dataclass
class Note:
    text: str
    tags: list[str] = field(default_factory=list)


ORDER = {"items": [{"name": "tea", "price": 2.5}], "status": "open"}
BAD_ORDER = {"items": [{"name": "tea", "price": "cheap"}], "status": "open"}
TYPED_ORDER = Order([Item("tea", 2.5)], "open")


def bodies(server: OpenAIServer) -> list[dict[str, Any]]:
    return [request.body for request in server.chat_requests()]


def test_an_openai_model_gets_a_strict_json_schema_response_format(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply.of_json(ORDER))
    assert mode.generate_object(openai_llm, "Order tea", Order) == TYPED_ORDER
    [body] = bodies(openai_server)
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "Order"
    assert response_format["json_schema"]["strict"] is True
    schema = response_format["json_schema"]["schema"]
    assert schema["required"] == ["items", "status"]
    assert schema["properties"]["items"]["items"]["properties"]["price"] == {"type": "number"}
    assert "tools" not in body and body["messages"] == [{"role": "user", "content": "Order tea"}]


def test_a_schema_with_optional_fields_is_not_sent_as_strict(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply.of_json({"text": "hi"}))
    assert llms.generate_object(openai_llm, "A note", Note) == Note("hi")
    [body] = bodies(openai_server)
    assert body["response_format"]["json_schema"]["strict"] is False


def test_the_tool_strategy_forces_one_tool_call_and_reads_its_arguments(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply(tool_calls=[Call("Order", json.dumps(ORDER))]))
    assert mode.generate_object(openai_llm, "Order tea", Order, strategy="tool") == TYPED_ORDER
    [body] = bodies(openai_server)
    assert body["tool_choice"] == {"type": "function", "function": {"name": "Order"}}
    [tool] = body["tools"]
    assert tool["function"]["name"] == "Order"
    assert tool["function"]["parameters"]["required"] == ["items", "status"]
    assert "response_format" not in body


def test_a_tool_call_that_does_not_validate_is_answered_with_its_problems(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(
        Reply(tool_calls=[Call("Order", json.dumps(BAD_ORDER), id="call_bad")]),
        Reply(tool_calls=[Call("Order", json.dumps(ORDER))]),
    )
    result = mode.generate_object(openai_llm, "Order tea", Order, strategy="tool", include_raw=True)
    assert result.value == TYPED_ORDER
    [rejected] = result.rejected
    assert rejected.problems == ('items[0].price: expected number, got "cheap"',)
    second = bodies(openai_server)[1]["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "call_bad"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_bad"
    assert 'items[0].price: expected number, got \\"cheap\\"' in json.dumps(second[-1]["content"])


def test_json_mode_asks_for_a_json_object_and_shows_the_schema(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply.of_json(ORDER))
    messages = [Message.system("You take orders."), Message.user("Order tea")]
    assert mode.generate_object(openai_llm, messages, Order, strategy="json_mode") == TYPED_ORDER
    [body] = bodies(openai_server)
    assert body["response_format"]["type"] == "json_object"
    # The schema rides along, for servers that constrain a json_object reply to it.
    schema = body["response_format"]["schema"]
    assert schema["properties"]["status"] == {"type": "string", "enum": ["open", "closed"]}
    system = body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You take orders.")
    assert '"status": {"type": "string", "enum": ["open", "closed"]}' in system["content"]


def test_the_prompted_strategy_reads_a_fenced_object_after_prose_with_trailing_commas(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    trailing_commas = '{"items": [{"name": "tea", "price": 2.5,},], "status": "open",}'
    reply = f"Sure, here it is:\n```json\n{trailing_commas}\n```"
    openai_server.push(reply)
    assert mode.generate_object(openai_llm, "Order tea", Order, strategy="prompted") == TYPED_ORDER
    [body] = bodies(openai_server)
    assert "response_format" not in body and "tools" not in body
    assert body["messages"][0]["role"] == "system"
    assert "JSON Schema" in body["messages"][0]["content"]


def test_a_refusal_raises_model_refusal_error(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply(refusal="I cannot help with that order."))
    with pytest.raises(llms.ModelRefusalError) as raised:
        mode.generate_object(openai_llm, "Order tea", Order)
    assert raised.value.refusal == "I cannot help with that order."
    assert len(bodies(openai_server)) == 1


def test_a_streamed_refusal_raises_too(openai_server: OpenAIServer, openai_llm: OpenAI) -> None:
    openai_server.push(Reply(refusal="No."))
    with pytest.raises(llms.ModelRefusalError):
        llms.generate_object(openai_llm, "Order tea", Order, on_partial=print)


def test_a_result_that_never_validates_raises_with_every_attempt(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply.of_json(BAD_ORDER), "no JSON here")
    with pytest.raises(llms.OutputValidationError) as raised:
        mode.generate_object(openai_llm, "Order tea", Order, max_retries=1)
    first, second = raised.value.rejected
    assert first.text == json.dumps(BAD_ORDER)
    assert first.problems == ('items[0].price: expected number, got "cheap"',)
    assert second.text == "no JSON here" and "no JSON object" in second.problems[0]
    assert "did not fit Order in 2 attempts" in str(raised.value)
    retry = bodies(openai_server)[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": json.dumps(BAD_ORDER)}
    assert 'items[0].price: expected number, got "cheap"' in retry[-1]["content"]


def test_a_server_that_refuses_response_format_gets_the_next_strategy(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.fail(Fault.http(400, "response_format json_schema is not supported"))
    openai_server.push(Reply(tool_calls=[Call("Order", json.dumps(ORDER))]))
    result = mode.generate_object(openai_llm, "Order tea", Order, include_raw=True)
    assert (result.value, result.strategy) == (TYPED_ORDER, "tool")
    refused, answered = bodies(openai_server)
    assert "response_format" in refused and "tools" in answered


def test_a_server_error_naming_response_format_gets_the_next_strategy(
    mode: Mode, openai_server: OpenAIServer, make_openai: Any
) -> None:
    # llama-cpp-python's server answers a response_format it cannot take with a 500.
    openai_server.fail(Fault.http(500, "response_format.type: Input should be 'json_object'"))
    openai_server.push(Reply(tool_calls=[Call("Order", json.dumps(ORDER))]))
    llm = make_openai(max_attempts=1)
    result = mode.generate_object(llm, "Order tea", Order, include_raw=True)
    assert (result.value, result.strategy) == (TYPED_ORDER, "tool")


def test_a_server_error_naming_nothing_of_the_strategy_is_raised(
    mode: Mode, openai_server: OpenAIServer, make_openai: Any
) -> None:
    openai_server.fail(Fault.http(500, "out of memory"))
    with pytest.raises(llms.ModelStatusError):
        mode.generate_object(make_openai(max_attempts=1), "Order tea", Order)
    assert len(bodies(openai_server)) == 1


def test_a_strategy_the_caller_chose_is_not_changed(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.fail(Fault.http(400, "response_format json_schema is not supported"))
    with pytest.raises(llms.ModelStatusError):
        llms.generate_object(openai_llm, "Order tea", Order, strategy="json_schema")
    assert len(bodies(openai_server)) == 1


def test_include_raw_gives_the_reply_and_its_usage(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply.of_json(ORDER))
    result = llms.generate_object(openai_llm, "Order tea", Order, include_raw=True)
    assert result.raw.content == json.dumps(ORDER)
    assert result.usage is not None
    assert result.usage.prompt_tokens == DEFAULT_USAGE["prompt_tokens"]
    assert result.usage.completion_tokens == DEFAULT_USAGE["completion_tokens"]


def test_a_streamed_result_reports_its_partial_objects(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply.of_json(ORDER, chunk_size=5))
    partials: list[Any] = []
    recorder = EventRecorder()
    order = mode.generate_object(
        openai_llm, "Order tea", Order, on_partial=partials.append, callbacks=recorder
    )
    assert order == TYPED_ORDER
    assert {"items": [{"name": "tea"}]} in partials
    assert {"items": [{"name": "tea", "price": 2.5}]} in partials
    assert partials[-1] == ORDER
    assert all(before != after for before, after in itertools.pairwise(partials))
    heard = [arguments[0] for _, *arguments in recorder.heard("partial_object")]
    assert heard == partials
    assert bodies(openai_server)[0]["stream"] is True


def test_a_wrapped_type_streams_its_inner_value(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply.of_json({"value": [1, 22, 333]}, chunk_size=3))
    partials: list[Any] = []
    numbers = llms.generate_object(openai_llm, "Numbers", list[int], on_partial=partials.append)
    assert numbers == [1, 22, 333]
    assert partials[-1] == [1, 22, 333] and [1] in partials


# Output types, read from a scripted model.


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Person(TypedDict):
    name: str
    age: int


class Pet(pydantic.BaseModel):
    name: str
    legs: int


def fake(*replies: str) -> llms.FakeLLM:
    return llms.FakeLLM(list(replies))


@pytest.mark.parametrize(
    ("output_type", "reply", "expected"),
    [
        (Person, '{"name": "Ada", "age": 36}', {"name": "Ada", "age": 36}),
        (Color, '{"value": "blue"}', Color.BLUE),
        (Literal["yes", "no"], '{"value": "no"}', "no"),
        (list[Item], '{"value": [{"name": "a", "price": 1}]}', [Item("a", 1.0)]),
        (int | list[int], '{"value": [3]}', [3]),
        (dict[str, list[Color]], '{"value": {"x": ["red"]}}', {"x": [Color.RED]}),
        (Pet, '{"name": "Rex", "legs": 4}', Pet(name="Rex", legs=4)),
    ],
)
def test_each_kind_of_output_type(mode: Mode, output_type: Any, reply: str, expected: Any) -> None:
    assert mode.generate_object(fake(reply), "Go", output_type) == expected


def test_a_json_schema_dict_is_checked_as_it_stands(mode: Mode) -> None:
    schema = {
        "type": "object",
        "properties": {"scores": {"type": "array", "items": {"type": "integer"}}},
        "required": ["scores"],
        "additionalProperties": False,
    }
    model = fake('{"scores": [1, "2"]}', '{"scores": [1, 2]}')
    assert mode.generate_object(model, "Go", schema) == {"scores": [1, 2]}
    rejection = model.calls[1].messages[-1].content
    assert 'scores[1]: expected integer, got "2"' in rejection


def test_a_pydantic_models_errors_name_their_path(mode: Mode) -> None:
    model = fake('{"name": "Rex", "legs": "many"}')
    with pytest.raises(llms.OutputValidationError) as raised:
        mode.generate_object(model, "Go", Pet, max_retries=0)
    [rejected] = raised.value.rejected
    assert rejected.problems[0].startswith("legs: ")


def test_a_fake_model_reply_with_a_refusal_raises() -> None:
    refusal = Message("assistant", "", extra={"refusal": "no"})
    with pytest.raises(llms.ModelRefusalError):
        llms.generate_object(llms.FakeLLM([refusal]), "Go", Person)


def test_a_tool_call_without_the_tools_name_is_still_read() -> None:
    call = ToolCall("c1", FunctionCall("other", '{"name": "Ada", "age": 1}'))
    model = llms.FakeLLM([Message.assistant("", [call])])
    assert llms.generate_object(model, "Go", Person, strategy="tool") == {"name": "Ada", "age": 1}


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda m: llms.generate_object(m, "Go", Person, strategy="grammar"),  # type: ignore[call-overload]
            llms.errors.ModelConfigError,
            "strategy must be one of json_schema, tool, json_mode, prompted",
        ),
        (
            lambda m: llms.generate_object(m, "Go", set[int]),
            llms.errors.ModelTypeError,
            "has no JSON schema",
        ),
        (
            lambda m: llms.generate_object(m, "Go", Person, max_retries=-1),
            llms.errors.ModelConfigError,
            "max_retries must be 0 or more",
        ),
        (
            lambda m: llms.generate_object(m, "Go", Person, max_retries="2"),  # type: ignore[call-overload]
            llms.errors.ModelTypeError,
            "max_retries must be a whole number",
        ),
        (
            lambda m: llms.generate_object(m, "Go", {"type": "dict"}),
            llms.errors.ModelTypeError,
            "'dict' is no JSON type",
        ),
    ],
)
def test_bad_arguments_are_refused_before_any_call(
    call: Callable[[llms.FakeLLM], Any], error: type[Exception], message: str
) -> None:
    model = fake()
    with pytest.raises(error, match=message):
        call(model)
    assert model.calls == []
