"""What `llms.generate_object` can tell is wrong before it sends anything is refused before any
request, with an error naming it: JSON Schema dicts no value could be checked against, prompts
and callbacks of the wrong kind, a strategy the model does not take. The server is real, so
a request sent by mistake would show in its log."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chainkit import llms
from chainkit.llms.openai.chat import OpenAI
from tests.support.openai_server import OpenAIServer, Reply


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def nested_value(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


CYCLE = {
    "type": "object",
    "properties": {"a": {"$ref": "#/$defs/A"}},
    "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
}
ANY_OF_CYCLE = {
    "type": "object",
    "properties": {"a": {"$ref": "#/$defs/A"}},
    "$defs": {"A": {"anyOf": [{"type": "null"}, {"allOf": [{"$ref": "#/$defs/A"}]}]}},
}


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        pytest.param(
            {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
            r"cannot follow \$ref 'https://example.com/a.json' \(at /properties/a\)",
            id="remote ref",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"$ref": "#/$defs/Gone"}}},
            r"\$ref '#/\$defs/Gone' \(at /properties/a\) points at nothing",
            id="dangling ref",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"$ref": "#/properties/b"}}},
            r"points at nothing",
            id="ref to a missing property",
        ),
        pytest.param(CYCLE, r"leads back to itself", id="cycle of refs"),
        pytest.param(ANY_OF_CYCLE, r"leads back to itself", id="cycle through anyOf"),
        pytest.param(nested(1_500), r"nests more than 256 levels deep", id="1,500 levels deep"),
        pytest.param(
            {"type": "object", "properties": {"a": {"enum": {1, 2}}}},
            r"holds a set at /properties/a/enum",
            id="a set",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"enum": [float("nan")]}}},
            r"holds nan at /properties/a/enum/0",
            id="NaN",
        ),
        pytest.param(
            {"type": "object", "properties": {1: {"type": "string"}}},
            r"has a key 1 at /properties",
            id="key not a string",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "str"}}},
            r"'str' is no JSON type",
            id="type typo",
        ),
    ],
)
def test_a_dict_schema_no_value_fits_is_refused_before_any_request(
    openai_server: OpenAIServer, openai_llm: OpenAI, schema: dict[str, Any], message: str
) -> None:
    with pytest.raises(llms.errors.ModelTypeError, match=message):
        llms.generate_object(openai_llm, "Answer", schema)
    assert openai_server.requests == []


def test_a_python_cycle_in_a_dict_schema_is_refused_too(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    with pytest.raises(llms.errors.ModelTypeError, match="nests more than 256 levels deep"):
        llms.generate_object(openai_llm, "Answer", schema)
    assert openai_server.requests == []


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        pytest.param(
            {
                "type": "object",
                "properties": {"name": {"type": "string"}, "kids": {"$ref": "#/$defs/Kids"}},
                "$defs": {"Kids": {"type": "array", "items": {"$ref": "#"}}},
            },
            {"name": "a", "kids": [{"name": "b", "kids": []}]},
            id="recursion through items, and a ref to the root",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {"v": {"$ref": "#/$defs/a~1b"}},
                "$defs": {"a/b": {"type": "integer"}},
            },
            {"v": 3},
            id="an escaped JSON pointer",
        ),
        pytest.param(nested(100), nested_value(100), id="100 levels"),
    ],
)
def test_a_dict_schema_that_recurses_through_a_value_is_taken(
    openai_server: OpenAIServer, openai_llm: OpenAI, schema: dict[str, Any], value: Any
) -> None:
    openai_server.push(Reply.of_json(value))
    assert llms.generate_object(openai_llm, "Answer", schema) == value


def test_a_wrong_value_under_a_recursive_ref_is_sent_back(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "kids": {"type": "array", "items": {"$ref": "#"}},
        },
        "required": ["name"],
    }
    good = {"name": "a", "kids": [{"name": "b"}]}
    openai_server.push(Reply.of_json({"name": "a", "kids": [{"name": 3}]}), Reply.of_json(good))
    result = llms.generate_object(openai_llm, "Answer", schema, include_raw=True)
    assert result.value == good
    assert result.rejected[0].problems == ("kids[0].name: expected string, got 3",)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(
            lambda m: llms.generate_object(m, {"role": "user"}, dict),  # type: ignore[call-overload]
            r"prompt must be the text of one user message \(str\) or a list of Messages",
            id="a dict for a prompt",
        ),
        pytest.param(
            lambda m: llms.generate_object(m, ["hi", "there"], dict),  # type: ignore[list-item]
            r"prompt must be .* a list of Messages",
            id="a list of str for a prompt",
        ),
        pytest.param(
            lambda m: llms.generate_object(m, "hi", dict, on_partial="print"),  # type: ignore[call-overload]
            r"on_partial must be a plain function",
            id="on_partial not callable",
        ),
        pytest.param(
            lambda m: llms.generate_object(m, "hi", dict, on_partial=_async_partial),  # type: ignore[arg-type]
            r"on_partial must be a plain function",
            id="an async on_partial",
        ),
    ],
)
def test_arguments_of_the_wrong_kind_are_refused_before_any_request(
    openai_server: OpenAIServer,
    openai_llm: OpenAI,
    call: Callable[[OpenAI], Any],
    message: str,
) -> None:
    with pytest.raises(llms.errors.ModelTypeError, match=message):
        call(openai_llm)
    assert openai_server.requests == []


async def _async_partial(value: Any) -> None:
    pass


def test_a_strategy_the_model_does_not_list_is_refused_before_any_call() -> None:
    with pytest.raises(
        llms.errors.ModelConfigError,
        match=r"strategy='tool': OfflineModel takes json_schema, prompted",
    ):
        llms.generate_object(llms.OfflineModel(), "hi", dict, strategy="tool")


@pytest.mark.parametrize(
    "option",
    [{"response_format": {"type": "json_object"}}, {"tool_choice": "auto"}],
)
def test_an_option_the_strategy_sets_is_refused_before_any_request(
    openai_server: OpenAIServer, openai_llm: OpenAI, option: dict[str, Any]
) -> None:
    with pytest.raises(
        llms.errors.ModelConfigError, match=f"generate_object sets {next(iter(option))}"
    ):
        llms.generate_object(openai_llm, "hi", dict, **option)
    assert openai_server.requests == []
