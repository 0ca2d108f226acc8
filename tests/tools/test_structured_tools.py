# Stringified annotations on purpose: the harder case for reading type hints (TypedDict's
# NotRequired in particular); test_typeddict_functional_form covers evaluated ones.
from __future__ import annotations

import asyncio
import enum
import functools
import json
import threading
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, Optional, Required, TypedDict, Union

import pytest

from chainkit import chains, tools
from chainkit.agents import Executor, OneShotAgent, ToolCallingAgent
from chainkit.llms import FakeLLM
from chainkit.schema import FunctionCall, Message, ToolCall
from chainkit.tools import Tool, ToolError
from chainkit.tools.structured import InvalidArgumentsError, StructuredTool, tool


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclass
class Item:
    """A line of an order."""

    name: str
    price: float
    tags: list[str] = field(default_factory=list)
    quantity: int = 1


@dataclass
class Order:
    items: list[Item]
    note: str | None = None


@dataclass
class Positive:
    value: int

    def __post_init__(self):
        if self.value <= 0:
            raise ValueError(f"value must be positive, got {self.value}")


class Address(TypedDict):
    city: str
    zip: NotRequired[str]


class Filters(TypedDict, total=False):
    query: Required[str]
    limit: int


# Evaluated (not stringified) annotations, from TypedDict's functional syntax.
Point = TypedDict("Point", {"x": int, "y": NotRequired[int]})  # noqa: UP013


@dataclass
class Node:
    children: list[Node]


ITEM_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "price": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "quantity": {"type": "integer", "default": 1},
    },
    "required": ["name", "price"],
    "additionalProperties": False,
    "description": "A line of an order.",
}


def schema_of(func):
    return StructuredTool(func, description="d").parameters


def error_of(structured, arguments):
    with pytest.raises(InvalidArgumentsError) as caught:
        structured.call(arguments)
    return str(caught.value)


# --- schemas -------------------------------------------------------------------------------


def test_schema_of_scalars_with_defaults():
    def f(text: str, count: int, ratio: float = 0.5, flag: bool = False, anything=None):
        return text

    assert schema_of(f) == {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number", "default": 0.5},
            "flag": {"type": "boolean", "default": False},
            "anything": {"default": None},
        },
        "required": ["text", "count"],
        "additionalProperties": False,
    }


def test_schema_of_lists_and_dicts():
    def f(numbers: list[int], anything: list, prices: dict[str, float], raw: dict):  # type: ignore[type-arg]
        return ""

    assert schema_of(f)["properties"] == {
        "numbers": {"type": "array", "items": {"type": "integer"}},
        "anything": {"type": "array"},
        "prices": {"type": "object", "additionalProperties": {"type": "number"}},
        "raw": {"type": "object"},
    }


def test_schema_of_optionals():
    def f(a: Optional[int], b: str | None = None):  # noqa: UP045 - both spellings on purpose
        return ""

    assert schema_of(f) == {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "b": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["a"],
        "additionalProperties": False,
    }


def test_schema_of_literals_and_enums():
    def f(
        mode: Literal["fast", "slow"],
        size: Literal[1, 2, 3],
        mixed: Literal["auto", 0],
        color: Color = Color.RED,
        level: Level = Level.LOW,
    ):
        return ""

    assert schema_of(f)["properties"] == {
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "size": {"type": "integer", "enum": [1, 2, 3]},
        "mixed": {"enum": ["auto", 0]},
        "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
        "level": {"type": "integer", "enum": [1, 2], "default": 1},
    }


def test_schema_of_nested_dataclasses():
    def f(order: Order):
        return ""

    assert schema_of(f)["properties"]["order"] == {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": ITEM_SCHEMA},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["items"],
        "additionalProperties": False,
    }


def test_schema_of_typeddicts_total_and_not_required():
    def f(address: Address, filters: Filters):
        return ""

    properties = schema_of(f)["properties"]
    assert properties["address"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    assert properties["filters"] == {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
        "additionalProperties": False,
    }


def test_typeddict_functional_form():
    def f(point: Point):
        return point

    structured = StructuredTool(f, description="d")
    assert structured.parameters["properties"]["point"]["required"] == ["x"]
    assert structured.call('{"point": {"x": "1"}}') == '{"x": 1}'


def test_string_forward_references_inside_generics_resolve():
    def f(
        counts: Optional[list["int"]],  # noqa: UP037, UP045 - the nested string is the point
        items: dict[str, "Item"] | None = None,  # noqa: UP037
        note: Annotated["str", "a note"] = "",  # noqa: UP037
    ):
        return repr((counts, items, note))

    structured = StructuredTool(f, description="d")
    assert structured.parameters["properties"] == {
        "counts": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
        "items": {
            "anyOf": [{"type": "object", "additionalProperties": ITEM_SCHEMA}, {"type": "null"}],
            "default": None,
        },
        "note": {"type": "string", "description": "a note", "default": ""},
    }
    assert structured.call('{"counts": ["1", 2], "items": {"a": {"name": "x", "price": 1}}}') == (
        "([1, 2], {'a': Item(name='x', price=1.0, tags=[], quantity=1)}, '')"
    )


def test_a_forward_reference_to_an_undefined_name_fails_when_the_tool_is_made():
    def f(value: list["Missing"]):  # type: ignore[name-defined]  # noqa: F821, UP037
        return ""

    with pytest.raises(TypeError, match=r"tool f: .*Missing"):
        StructuredTool(f, description="d")


def test_hints_are_read_from_classes_callable_objects_and_partials():
    class Scale:
        def __call__(self, factor: float, values: list["int"]) -> list[float]:  # noqa: UP037
            return [factor * value for value in values]

    def times(base: int, by: int) -> int:
        return base * by

    item = StructuredTool(Item, description="d")
    scale = StructuredTool(Scale(), name="scale", description="d")
    double = StructuredTool(functools.partial(times, 2), name="double", description="d")
    assert item.parameters["properties"]["price"] == {"type": "number"}
    assert scale.call('{"factor": 2, "values": ["3"]}') == "[6.0]"
    assert double.call('{"by": "10"}') == "20"


def test_schema_of_unions():
    def f(
        key: int | str,
        spot: Union[Item, list[float]],  # noqa: UP007 - both spellings on purpose
        tag: Annotated[Literal["a", "b"] | bool | None, "a tag"] = None,
    ):
        return ""

    assert schema_of(f)["properties"] == {
        "key": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "spot": {
            "anyOf": [
                ITEM_SCHEMA,
                {"type": "array", "items": {"type": "number"}},
            ]
        },
        # None joins the members rather than wrapping them in a second anyOf.
        "tag": {
            "anyOf": [
                {"type": "string", "enum": ["a", "b"]},
                {"type": "boolean"},
                {"type": "null"},
            ],
            "description": "a tag",
            "default": None,
        },
    }


@pytest.mark.parametrize(
    ("annotation", "value", "received"),
    [
        # A value of a member's own JSON type keeps it, whatever the members' order.
        ("int | str", '"3"', "'3'"),
        ("int | str", "3", "3"),
        ("str | int", "3", "3"),
        ("str | int", '"3"', "'3'"),
        ("bool | str", '"true"', "'true'"),
        ("float | int", "3", "3"),
        ("int | float", "2.5", "2.5"),
        ("int | float", "3.0", "3.0"),
        # Else the first member that accepts it after coercion, in the declared order.
        ("int | list[int]", '"3"', "3"),
        ("float | bool", '"true"', "True"),
        ("list[int] | float", '"[1, 2]"', "[1, 2]"),
        ("Color | int", '"RED"', "<Color.RED: 'red'>"),
        (
            "Item | list[int]",
            '{"name": "n", "price": 1}',
            "Item(name='n', price=1.0, tags=[], quantity=1)",
        ),
        ("Item | Order", '{"items": []}', "Order(items=[], note=None)"),
        ("int | str | None", "null", "None"),
    ],
)
def test_unions_keep_what_a_value_means(annotation, value, received):
    namespace: dict[str, Any] = {"Item": Item, "Order": Order, "Color": Color}
    exec(f"def f(value: {annotation}): return repr(value)", namespace)
    assert StructuredTool(namespace["f"], description="d").call(f'{{"value": {value}}}') == (
        received
    )


def test_union_errors_name_what_was_expected():
    def f(key: int | bool = 0, numbers: list[int] | str = ""):
        return ""

    echo = echo_tool(f)
    assert error_of(echo, '{"key": "x"}').endswith('key: expected integer or boolean, got "x"')
    # The member of the value's own JSON type says what is wrong inside it.
    assert error_of(echo, '{"numbers": [1, "a"]}').endswith('numbers[1]: expected integer, got "a"')


def test_a_union_with_a_string_takes_plain_text():
    @tool
    def lookup(key: int | str) -> str:
        """Looks up."""
        return repr(key)

    assert lookup.call("贵州茅台") == "'贵州茅台'"
    assert lookup.call('{"key": 600519}') == "600519"


def test_annotated_description_beats_the_docstring():
    def f(city: Annotated[str, "城市名称"], days: Annotated[int, "how many days"] = 1):
        """Weather forecast.

        Args:
            city: overridden by Annotated
        """
        return ""

    assert StructuredTool(f).parameters["properties"] == {
        "city": {"type": "string", "description": "城市名称"},
        "days": {"type": "integer", "description": "how many days", "default": 1},
    }


@pytest.mark.parametrize(
    ("annotation", "reason"),
    [
        ("set[int]", "unsupported type set[int]"),
        ("int | set[int]", "unsupported type set[int]"),
        ("dict[int, str]", "JSON object keys are strings"),
    ],
)
def test_unsupported_types_fail_when_the_tool_is_made(annotation, reason):
    namespace: dict[str, Any] = {"Node": Node}
    exec(f"def f(value: {annotation}): pass", namespace)
    with pytest.raises(TypeError, match="parameter value") as caught:
        StructuredTool(namespace["f"], name="t", description="d")
    assert reason in str(caught.value)


def test_a_recursive_dataclass_parameter_is_a_definition_its_refs_point_at():
    def count(tree: Node) -> str:
        """Counts nodes."""

        def size(node: Node) -> int:
            return 1 + sum(size(child) for child in node.children)

        return str(size(tree))

    made = StructuredTool(count)
    parameters = made.parameters
    node = parameters["$defs"]["Node"]
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert parameters["properties"]["tree"]["properties"] == node["properties"]
    assert made.call(json.dumps({"tree": {"children": [{"children": [{"children": []}]}]}})) == "3"


def test_var_args_are_refused():
    def f(*values: int):
        return ""

    with pytest.raises(TypeError, match=r"\*args and \*\*kwargs"):
        StructuredTool(f, description="d")


def test_parameters_reach_tool_info():
    @tool
    def get_financial_report(stock: str, year: str) -> str:
        """获取上市公司财务报告。

        Args:
            stock: 股票代码
            year: 年份
        """
        return ""

    assert get_financial_report.info().to_dict() == {
        "type": "function",
        "function": {
            "name": "get_financial_report",
            "description": "获取上市公司财务报告。",
            "parameters": {
                "type": "object",
                "properties": {
                    "stock": {"type": "string", "description": "股票代码"},
                    "year": {"type": "string", "description": "年份"},
                },
                "required": ["stock", "year"],
                "additionalProperties": False,
            },
        },
    }


# --- docstrings ----------------------------------------------------------------------------


def test_google_docstring():
    def f(query: str, limit: int = 5):
        """Search the web for
        recent pages.

        Second paragraph, not part of the description.

        Args:
            query (str): what to look for,
                in any language.
            limit: at most this many results.

        Returns:
            The results.
        """
        return ""

    structured = StructuredTool(f)
    assert structured.description == "Search the web for recent pages."
    properties = structured.parameters["properties"]
    assert properties["query"]["description"] == "what to look for, in any language."
    assert properties["limit"]["description"] == "at most this many results."


def test_rest_docstring():
    def f(query: str, limit: int = 5):
        """Search the web.

        :param query: what to look for,
            in any language.
        :param int limit: at most this many results.
        :returns: the results.
        """
        return ""

    structured = StructuredTool(f)
    assert structured.description == "Search the web."
    properties = structured.parameters["properties"]
    assert properties["query"]["description"] == "what to look for, in any language."
    assert properties["limit"]["description"] == "at most this many results."


def test_explicit_name_and_description_win():
    def f(x: int):
        """Docstring summary."""
        return ""

    structured = StructuredTool(f, name="计算器", description="计算数字")
    assert (structured.name, structured.description) == ("计算器", "计算数字")


def test_a_description_is_required():
    def f(x: int):
        return ""

    with pytest.raises(ValueError, match="tool f needs a description"):
        StructuredTool(f)


# --- coercion ------------------------------------------------------------------------------


def echo_tool(func):
    """A tool returning repr of what its function received, to see coerced values."""
    return StructuredTool(func, description="echo")


def test_scalars_are_coerced_when_unambiguous():
    def f(count: int, ratio: float, flag: bool, code: str, whole: int):
        return repr((count, ratio, flag, code, whole))

    echo = echo_tool(f)
    arguments = '{"count": "3", "ratio": 2, "flag": "TRUE", "code": 600519, "whole": 4.0}'
    assert echo.call(arguments) == "(3, 2.0, True, '600519', 4)"
    arguments = '{"count": " -7 ", "ratio": "2.5", "flag": "false", "code": 1.5, "whole": -0.0}'
    assert echo.call(arguments) == "(-7, 2.5, False, '1.5', 0)"


def test_ambiguous_values_are_not_coerced():
    def f(count: int = 0, flag: bool = False, ratio: float = 0.0, code: str = ""):
        return ""

    echo = echo_tool(f)
    assert error_of(echo, '{"count": 2.5}').endswith("count: expected integer, got 2.5")
    assert error_of(echo, '{"count": true}').endswith("count: expected integer, got true")
    assert error_of(echo, '{"count": "3.0"}').endswith('count: expected integer, got "3.0"')
    assert error_of(echo, '{"flag": "yes"}').endswith('flag: expected boolean, got "yes"')
    assert error_of(echo, '{"flag": 1}').endswith("flag: expected boolean, got 1")
    assert error_of(echo, '{"ratio": "nan"}').endswith('ratio: expected number, got "nan"')
    assert error_of(echo, '{"code": false}').endswith("code: expected string, got false")


def test_enums_and_literals_are_coerced():
    def f(color: Color, level: Level, size: Literal[1, 2], mode: Literal["a", "b"] = "a"):
        return repr((color, level, size, mode))

    echo = echo_tool(f)
    assert echo.call('{"color": "green", "level": 2, "size": 1}') == (
        "(<Color.GREEN: 'green'>, <Level.HIGH: 2>, 1, 'a')"
    )
    # by name, and numbers written as text
    assert echo.call('{"color": "RED", "level": "1", "size": "2", "mode": "b"}') == (
        "(<Color.RED: 'red'>, <Level.LOW: 1>, 2, 'b')"
    )


def test_containers_dataclasses_and_typeddicts_are_built_recursively():
    seen: dict[str, Any] = {}

    def f(order: Order, address: Address, prices: dict[str, float], tags: list[str]):
        seen.update(order=order, address=address, prices=prices, tags=tags)
        return "ok"

    echo = echo_tool(f)
    arguments = {
        "order": {"items": [{"name": "茶", "price": "12.5"}, {"name": "b", "price": 3}]},
        "address": {"city": "北京"},
        "prices": {"茶": 1},
        "tags": '["a", "b"]',  # double-encoded, as some models send arrays
    }
    assert echo.call(json.dumps(arguments, ensure_ascii=False)) == "ok"
    assert seen == {
        "order": Order([Item("茶", 12.5), Item("b", 3.0)]),
        "address": {"city": "北京"},
        "prices": {"茶": 1.0},
        "tags": ["a", "b"],
    }
    assert isinstance(seen["order"].items[0], Item)


def test_optional_accepts_null():
    def f(limit: int | None, note: str | None = "x"):
        return repr((limit, note))

    assert echo_tool(f).call('{"limit": null, "note": null}') == "(None, None)"
    assert echo_tool(f).call('{"limit": "4"}') == "(4, 'x')"


def test_defaults_apply_when_arguments_are_left_out():
    def f(a: int, b: int = 10, c: Color = Color.GREEN):
        return repr((a, b, c))

    assert echo_tool(f).call('{"a": 1}') == "(1, 10, <Color.GREEN: 'green'>)"


def test_positional_only_parameters():
    def f(a: int, b: int = 2, /, c: int = 3):
        return repr((a, b, c))

    echo = echo_tool(f)
    assert echo.call('{"a": 1, "c": 5}') == "(1, 2, 5)"
    assert echo.call('{"a": 1, "b": 7}') == "(1, 7, 3)"


# --- error messages ------------------------------------------------------------------------


def order_tool():
    @tool
    def place_order(items: list[Item], color: Color, mode: Literal["fast", "slow"] = "fast"):
        """Places an order."""
        return "placed"

    return place_order


def test_malformed_json_names_position_and_excerpt():
    assert error_of(order_tool(), '{"color": "red" "items": []}') == (
        "Invalid arguments for tool place_order: not valid JSON at position 16 "
        '(Expecting \',\' delimiter), near \'{"color": "red" "items": [\''
    )


def test_malformed_json_position_counts_leading_whitespace():
    message = error_of(order_tool(), '  \n {"items": [1,')
    assert message.startswith(
        "Invalid arguments for tool place_order: not valid JSON at position 17 "
    )


def test_malformed_json_excerpt_is_short_and_around_the_error():
    arguments = '{"items": [' + '{"name": "a", "price": 1}, ' * 10 + '{"name": "b" "price": 2}]}'
    message = error_of(order_tool(), arguments)
    assert message == (
        "Invalid arguments for tool place_order: not valid JSON at position 294 "
        '(Expecting \',\' delimiter), near \'": 1}, {"name": "b" "price": 2\''
    )


def test_deeply_nested_json_is_refused():
    assert error_of(order_tool(), "[" * 100_000) == (
        "Invalid arguments for tool place_order: not valid JSON: nested too deeply"
    )


def test_missing_required_field():
    assert error_of(order_tool(), '{"items": []}') == (
        "Invalid arguments for tool place_order: color: missing required field"
    )


def test_unknown_field():
    assert error_of(order_tool(), '{"items": [], "color": "red", "colour": "red"}') == (
        "Invalid arguments for tool place_order: colour: unknown field (known: items, color, mode)"
    )


def test_wrong_type_at_a_nested_path():
    arguments = {
        "color": "red",
        "items": [
            {"name": "a", "price": 1},
            {"name": "b", "price": 2},
            {"name": "c", "price": "abc"},
        ],
    }
    assert error_of(order_tool(), json.dumps(arguments)) == (
        'Invalid arguments for tool place_order: items[2].price: expected number, got "abc"'
    )


def test_value_outside_literal_or_enum_lists_the_allowed():
    assert error_of(order_tool(), '{"items": [], "color": "blue", "mode": "turbo"}') == (
        "Invalid arguments for tool place_order: "
        'color: expected one of "red", "green", got "blue"; '
        'mode: expected one of "fast", "slow", got "turbo"'
    )


def test_every_problem_is_reported_at_once():
    arguments = {
        "items": [{"name": "a", "price": "x", "extra": 1}, {"price": 1}, "not an item"],
        "mode": 3,
    }
    with pytest.raises(InvalidArgumentsError) as caught:
        order_tool().call(json.dumps(arguments))
    assert [str(problem) for problem in caught.value.problems] == [
        'items[0].price: expected number, got "x"',
        "items[0].extra: unknown field (known: name, price, tags, quantity)",
        "items[1].name: missing required field",
        'items[2]: expected object, got "not an item"',
        'mode: expected one of "fast", "slow", got 3',
        "color: missing required field",
    ]
    first = caught.value.problems[0]
    assert first == tools.ArgumentProblem("items[0].price", 'expected number, got "x"')
    assert caught.value.tool_name == "place_order"
    assert isinstance(caught.value, ToolError)


def test_long_values_are_cut_short_in_messages():
    def f(count: int):
        return ""

    message = error_of(echo_tool(f), json.dumps({"count": "9" * 5000 + "x"}))
    assert message == f'Invalid arguments for tool f: count: expected integer, got "{"9" * 38}…'


def test_dict_keys_that_are_not_identifiers_are_quoted_in_paths():
    def f(prices: dict[str, float]):
        return ""

    assert error_of(echo_tool(f), '{"prices": {"茶": 1, "a b": "x"}}') == (
        'Invalid arguments for tool f: prices["a b"]: expected number, got "x"'
    )


def test_arguments_that_are_not_an_object():
    assert error_of(order_tool(), "[1, 2]") == (
        "Invalid arguments for tool place_order: expected object, got [1, 2]"
    )


def test_a_dataclass_post_init_error_is_reported():
    def f(amount: Positive):
        return ""

    assert error_of(echo_tool(f), '{"amount": {"value": -1}}') == (
        "Invalid arguments for tool f: amount: value must be positive, got -1"
    )


# --- input forms ---------------------------------------------------------------------------


def test_single_string_parameter_takes_plain_text():
    @tool
    def search(query: str) -> str:
        """Searches."""
        return f"[{query}]"

    assert search.call("贵州茅台 2025 净利润") == "[贵州茅台 2025 净利润]"
    assert search.call('{"query": "x"}') == "[x]"
    assert search.call('"quoted"') == "[quoted]"
    assert search.call("123") == "[123]"
    assert search.call("[1, 2]") == "[[1, 2]]"
    assert error_of(search, '{"q": "x"}').startswith(
        "Invalid arguments for tool search: q: unknown"
    )


class Reverse(Tool):
    name = "reverse"
    description = "Reverses the text."

    def call(self, input: str) -> str:
        return f"[{input[::-1]}]"


@tool
def bracket(query: str) -> str:
    """Brackets the text."""
    return f"[{query}]"


@tool
async def abracket(query: str) -> str:
    """Brackets the text, awaited."""
    return f"[{query}]"


def blank_input_run(tool_name):
    """A OneShotAgent run whose model calls `tool_name` with a blank Action Input."""
    fake = FakeLLM([f"Action: {tool_name}\nAction Input:   \n", "Final Answer: done"])
    agent = OneShotAgent(fake, [Reverse(), bracket, abracket])
    return Executor(agent, return_intermediate_steps=True), {"input": "q"}


@pytest.mark.parametrize("tool_name", ["reverse", "bracket", "abracket"])
def test_a_blank_action_input_is_the_empty_string_for_every_tool_taking_one(tool_name):
    executor, inputs = blank_input_run(tool_name)
    steps = chains.call(executor, inputs)["intermediate_steps"]
    executor, inputs = blank_input_run(tool_name)
    async_steps = asyncio.run(chains.acall(executor, inputs))["intermediate_steps"]
    assert [step.observation for step in steps + async_steps] == ["[]", "[]"]


def test_called_with_blank_text_a_tool_taking_one_string_gets_it():
    assert bracket.call("") == asyncio.run(abracket.acall("")) == Reverse().call("") == "[]"
    assert bracket.call(" \n") == asyncio.run(bracket.acall(" \n")) == Reverse().call("\n ")


def test_a_blank_input_leaves_an_optional_string_its_default():
    @tool
    def search(query: str = "everything") -> str:
        """Searches."""
        return f"[{query}]"

    assert search.call("") == asyncio.run(search.acall(" ")) == "[everything]"


def test_single_parameter_of_another_type_takes_the_bare_value():
    @tool
    def square(x: int) -> int:
        """Squares."""
        return x * x

    assert square.call("5") == "25"
    assert square.call('"6"') == "36"
    assert error_of(square, "five") == (
        'Invalid arguments for tool square: x: expected integer, got "five"'
    )


def test_a_function_without_parameters_ignores_text():
    @tool
    def now() -> str:
        """The time."""
        return "noon"

    assert now.call("") == now.call("what time is it?") == now.call("{}") == "noon"
    assert error_of(now, '{"tz": "UTC"}') == (
        "Invalid arguments for tool now: tz: unknown field (known: none)"
    )


# --- native tool calls: strict arguments ------------------------------------------------------


def search_tool(calls):
    @tool
    def search(query: str) -> str:
        """Searches announcements."""
        calls.append(query)
        return f"found: {query}"

    return search


def native_error_of(structured, arguments):
    with pytest.raises(InvalidArgumentsError) as caught:
        structured.input_from_arguments(arguments)
    return str(caught.value)


def test_cut_off_native_arguments_never_reach_the_function():
    calls: list[str] = []
    search = search_tool(calls)
    cut_off = ToolCall("c1", FunctionCall("search", '{"query": "moutai net'))
    fake = FakeLLM([Message.assistant("", [cut_off]), "sorry"])
    outputs = chains.call(
        Executor(ToolCallingAgent(fake, [search]), return_intermediate_steps=True), {"input": "q"}
    )
    assert calls == []
    assert outputs["intermediate_steps"][0].observation == (
        "Invalid arguments for tool search: not valid JSON at position 10 (Unterminated string "
        'starting at), near \'{"query": "moutai ne\''
    )
    assert search.call('{"query": "moutai net') == 'found: {"query": "moutai net'  # MRKL text


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('"moutai net profit"', 'expected object, got "moutai net profit"'),
        ("[1, 2]", "expected object, got [1, 2]"),
        ("null", "expected object, got null"),
        ('{"q": "x"}', "q: unknown field (known: query); query: missing required field"),
    ],
)
def test_native_arguments_must_be_an_object_fitting_the_schema(arguments, problem):
    assert native_error_of(search_tool([]), arguments) == (
        f"Invalid arguments for tool search: {problem}"
    )


def test_checked_native_arguments_are_what_call_takes():
    calls: list[str] = []
    search = search_tool(calls)
    checked = search.input_from_arguments('{"query": 600519}')
    assert checked == '{"query": 600519}'
    assert search.call(checked) == "found: 600519"
    assert search.call(checked) == "found: 600519"  # calling again gives the same
    assert asyncio.run(search.acall(checked)) == "found: 600519"
    double_encoded = json.dumps(json.dumps({"query": "x"}))
    assert search.call(search.input_from_arguments(double_encoded)) == "found: x"
    assert calls == ["600519", "600519", "600519", "x"]


def test_blank_native_arguments_mean_none():
    @tool
    def now() -> str:
        """The time."""
        return "noon"

    assert now.call(now.input_from_arguments("")) == "noon"
    assert native_error_of(search_tool([]), " ") == (
        "Invalid arguments for tool search: query: missing required field"
    )


def test_malformed_arguments_are_worded_alike_for_every_tool():
    class Plain(Tool):
        name = "search"
        description = "d"

    arguments = '{"input": "a" "b"}'
    with pytest.raises(ToolError) as plain:
        Plain().input_from_arguments(arguments)
    expected = (
        "Invalid arguments for tool search: not valid JSON at position 14 (Expecting ',' "
        'delimiter), near \'{"input": "a" "b"}\''
    )
    assert str(plain.value) == native_error_of(search_tool([]), arguments) == expected
    assert Tool.input_from_arguments(search_tool([]), '{"input": "x"}') == "x"  # the base differs


def test_return_values_become_text():
    @tool
    def answer(kind: str) -> Any:
        """Answers."""
        values: dict[str, Any] = {
            "text": "原文",
            "dict": {"城市": "北京", "colors": [Color.RED]},
            "dataclass": Item("茶", 1.5),
            "none": None,
            "number": 3,
        }
        return values[kind]

    assert answer.call("text") == "原文"
    assert answer.call("dict") == '{"城市": "北京", "colors": ["red"]}'
    assert answer.call("dataclass") == '{"name": "茶", "price": 1.5, "tags": [], "quantity": 1}'
    assert answer.call("none") == "null"
    assert answer.call("number") == "3"


def test_function_errors_propagate_unchanged():
    @tool
    def fail(x: int) -> str:
        """Fails."""
        raise ToolError(f"no data for {x}")

    with pytest.raises(ToolError, match=r"^no data for 3$"):
        fail.call('{"x": 3}')


# --- sync and async ------------------------------------------------------------------------


def test_async_function_is_awaited_natively_by_acall():
    @tool
    async def lookup(key: str) -> str:
        """Looks up."""
        await asyncio.sleep(0)
        return f"{key}:{threading.get_ident()}"

    async def main():
        return await lookup.acall('{"key": "k"}'), threading.get_ident()

    result, loop_thread = asyncio.run(main())
    assert result == f"k:{loop_thread}"


def test_async_function_runs_from_call_with_and_without_a_running_loop():
    @tool
    async def double(x: int) -> int:
        """Doubles."""
        await asyncio.sleep(0)
        return 2 * x

    assert double.call("4") == "8"

    async def inside_a_loop():
        return double.call("5")

    assert asyncio.run(inside_a_loop()) == "10"


def test_sync_function_runs_in_a_worker_thread_under_acall():
    @tool
    def where() -> int:
        """Which thread."""
        return threading.get_ident()

    async def main():
        return await where.acall(""), threading.get_ident()

    worker, loop_thread = asyncio.run(main())
    assert int(worker) != loop_thread


def test_async_bad_arguments_raise_before_the_function_runs():
    calls = []

    @tool
    async def record(x: int) -> str:
        """Records."""
        calls.append(x)
        return ""

    with pytest.raises(InvalidArgumentsError, match="x: expected integer"):
        asyncio.run(record.acall('{"x": "many"}'))
    assert calls == []


# --- the decorator -------------------------------------------------------------------------


def test_bare_decorator():
    def add(a: int, b: int) -> int:
        """Adds two numbers."""
        return a + b

    decorated = tool(add)
    assert isinstance(decorated, StructuredTool)
    assert (decorated.name, decorated.description, decorated.return_direct) == (
        "add",
        "Adds two numbers.",
        False,
    )
    assert decorated.func is add
    assert decorated.call('{"a": 2, "b": "3"}') == "5"


def test_a_tool_stays_callable_like_its_function():
    @tool
    def add(a: int, b: int = 10) -> int:
        """Adds two numbers."""
        return a + b

    @tool(name="scale")
    async def scale(x: float, /, factor: float) -> float:
        """Scales."""
        return x * factor

    # Called directly the function runs as written: no schema, no coercion.
    assert add(1, 2) == 3
    assert add(1) == 11
    assert add("a", b="b") == "ab"
    assert asyncio.run(scale(2.0, factor=3.0)) == 6.0


def test_decorator_with_options():
    @tool(name="获取财报", description="获取上市公司财务报告", return_direct=True)
    def report(stock: str, year: int) -> str:
        return f"{year}年{stock}净利润685亿"

    assert isinstance(report, StructuredTool)
    assert (report.name, report.description, report.return_direct) == (
        "获取财报",
        "获取上市公司财务报告",
        True,
    )
    assert report.call('{"stock": "贵州茅台", "year": "2025"}') == "2025年贵州茅台净利润685亿"
    assert repr(report) == "StructuredTool(name='获取财报')"


# --- through the executor ------------------------------------------------------------------


def test_tool_calling_agent_hears_what_was_wrong_and_retries():
    calls = []

    @tool
    def get_financial_report(stock: str, year: int) -> str:
        """获取上市公司财务报告"""
        calls.append((stock, year))
        return f"{year}年贵州茅台净利润685亿"

    def reply(arguments, call_id):
        return Message.assistant(
            "", [ToolCall(call_id, FunctionCall(get_financial_report.name, arguments))]
        )

    fake = FakeLLM(
        [
            reply('{"stock": "600519", "year": "去年"', "c1"),
            reply('{"stock": "600519", "year": "last"}', "c2"),
            reply('{"stock": 600519, "year": "2025"}', "c3"),
            "2025年贵州茅台净利润685亿元",
        ]
    )
    executor = Executor(ToolCallingAgent(fake, [get_financial_report]))
    assert chains.run(executor, "茅台2025年净利润是多少?") == "2025年贵州茅台净利润685亿元"
    observations = [m.content for m in fake.calls[3].messages if m.role == "tool"]
    assert observations == [
        "Invalid arguments for tool get_financial_report: not valid JSON at position 32 "
        '(Expecting \',\' delimiter), near \'00519", "year": "去年"\'',
        'Invalid arguments for tool get_financial_report: year: expected integer, got "last"',
        "2025年贵州茅台净利润685亿",
    ]
    assert calls == [("600519", 2025)]
    parameters = fake.calls[0].options["tools"][0].parameters
    assert parameters["properties"]["year"] == {"type": "integer"}


def test_mrkl_agent_passes_action_input_text():
    @tool
    def search(query: str) -> str:
        """Searches announcements."""
        return f"found: {query}"

    fake = FakeLLM(
        [
            "I should search.\nAction: search\nAction Input: 茅台 公告",
            "I now know the final answer.\nFinal Answer: done",
        ]
    )
    outputs = chains.call(
        Executor(OneShotAgent(fake, [search]), return_intermediate_steps=True), {"input": "q"}
    )
    assert [step.observation for step in outputs["intermediate_steps"]] == ["found: 茅台 公告"]


def test_mrkl_text_that_is_a_union_members_json_keeps_its_type() -> None:
    @tool
    def pick(x: list[str] | str) -> str:
        """Picks."""
        return repr(x)

    assert pick.call('["a", "b"]') == "['a', 'b']"
    assert pick.call("plain words") == "'plain words'"
    assert pick.call("42") == "'42'"  # a number is not a member's type: the text stands


# --- defaults: what is advertised is what is accepted -----------------------------------------


@dataclass
class Options:
    depth: int = 1


@pytest.mark.parametrize(
    ("annotation", "value_schema"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Color, {"type": "string", "enum": ["red", "green"]}),
        (Item, None),  # an object: checked below through call()
    ],
)
def test_a_none_default_makes_the_parameter_nullable(annotation, value_schema):
    def f(a=None):
        return repr(a)

    f.__annotations__ = {"a": annotation}
    echo = echo_tool(f)
    schema = echo.parameters["properties"]["a"]
    assert schema["default"] is None
    assert schema["anyOf"][-1] == {"type": "null"}
    if value_schema is not None:
        assert schema["anyOf"][0] == value_schema
    # The advertised default is accepted back, sent natively or as MRKL text.
    assert echo.input_from_arguments('{"a": null}') == '{"a": null}'
    assert echo.call('{"a": null}') == echo.call("{}") == "None"


@dataclass
class Query:
    text: str = None  # type: ignore[assignment]


def test_a_none_default_in_a_dataclass_field_is_nullable_too():
    def f(query: Query):
        return repr(query.text)

    assert echo_tool(f).call('{"query": {"text": null}}') == "None"


@pytest.mark.parametrize(
    ("default", "annotation", "message"),
    [
        (1.5, int, "default 1.5 does not fit the type: expected integer, got 1.5"),
        ("k", Literal["c", "f"], 'default \'k\' does not fit the type: expected one of "c", "f"'),
        (0, bool, "default 0 does not fit the type: expected boolean, got 0"),
        ("x", list[str], "default 'x' does not fit the type: expected array"),
        ("purple", Color, 'expected one of "red", "green", got "purple"'),
        ({"depth": "deep"}, Options, "default {'depth': 'deep'} does not fit the type: depth"),
    ],
)
def test_a_default_that_does_not_fit_the_type_fails_when_the_tool_is_made(
    default, annotation, message
):
    def f(a=default):
        return a

    f.__annotations__ = {"a": annotation}
    with pytest.raises(TypeError) as caught:
        StructuredTool(f, description="d")
    assert str(caught.value).startswith("tool f, parameter a: ")
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("default", "annotation", "advertised"),
    [
        (1, float, 1),
        (Color.RED, Color, "red"),
        ("red", Color, "red"),
        ((1, 2), list[int], [1, 2]),
        (Options(depth=3), Options, {"depth": 3}),
        ([Color.GREEN], list[Color], ["green"]),
        ({1, 2}, Any, [1, 2]),
    ],
)
def test_defaults_are_advertised_in_their_json_form(default, annotation, advertised):
    def f(a=default):
        return repr(a)

    f.__annotations__ = {"a": annotation}
    echo = echo_tool(f)
    assert echo.parameters["properties"]["a"]["default"] == advertised
    # What is advertised is accepted when sent back.
    echo.input_from_arguments(json.dumps({"a": advertised}))


@pytest.mark.parametrize(
    ("default", "annotation"),
    [
        (float("nan"), float),
        (float("inf"), float),
        (object(), Any),
        (b"bytes", Any),
        (Options, Any),
    ],
    ids=["nan", "inf", "object", "bytes", "class"],
)
def test_a_default_without_a_json_form_is_not_advertised(default, annotation):
    def f(a=default):
        return "ok"

    f.__annotations__ = {"a": annotation}
    echo = echo_tool(f)
    schema = echo.parameters["properties"]["a"]
    assert "default" not in schema
    assert echo.parameters["required"] == []
    # The schema stays strict JSON (NaN and Infinity are not JSON).
    json.dumps(echo.parameters, allow_nan=False)
    assert echo.call("{}") == "ok"


# --- single-parameter tools read plain text -----------------------------------------------------


class Size(enum.Enum):
    SMALL = "s"
    LARGE = "l"


@pytest.mark.parametrize(
    ("annotation", "text", "received"),
    [
        (Literal["red", "green"], "red", "'red'"),
        (Literal["red", "green"], " green\n", "'green'"),
        (Literal["1", "2"], "1", "'1'"),
        (Literal[1, 2], "2", "2"),
        (Color, "red", "<Color.RED: 'red'>"),
        (Color, "GREEN", "<Color.GREEN: 'green'>"),
        (Size, "l", "<Size.LARGE: 'l'>"),
        (Level, "2", "<Level.HIGH: 2>"),
        (bool, "True", "True"),
        (bool, "false", "False"),
        (int, " 7 ", "7"),
        (float, "2.5", "2.5"),
        (str | None, "hello world", "'hello world'"),
        (int | None, "3", "3"),
        (Literal["a", "b"] | None, "b", "'b'"),
        (Any, "plain words", "'plain words'"),
        (Any, "5", "5"),
    ],
)
def test_a_single_parameter_reads_plain_text_of_its_type(annotation, text, received):
    def paint(value):
        return repr(value)

    paint.__annotations__ = {"value": annotation}
    assert echo_tool(paint).call(text) == received


@pytest.mark.parametrize(
    ("annotation", "text", "problem"),
    [
        (Literal["red", "green"], "purple", 'value: expected one of "red", "green", got "purple"'),
        (Color, "blue", 'value: expected one of "red", "green", got "blue"'),
        (int, "five", 'value: expected integer, got "five"'),
        (bool, "yes", 'value: expected boolean, got "yes"'),
        (Item, "a pen", "not valid JSON at position 0"),
        (list[int], "1, 2", "not valid JSON"),
    ],
)
def test_plain_text_that_is_not_a_value_names_what_was_expected(annotation, text, problem):
    def paint(value):
        return repr(value)

    paint.__annotations__ = {"value": annotation}
    assert error_of(echo_tool(paint), text).startswith(
        f"Invalid arguments for tool paint: {problem}"
    )


def test_the_issue_example_paint_red():
    @tool
    def paint(color: Literal["red", "green"]) -> str:
        """Paints."""
        return f"painted {color}"

    assert paint.call("red") == "painted red"


@dataclass
class BadDefault:
    count: int = "many"  # type: ignore[assignment]


def test_a_dataclass_field_default_that_does_not_fit_names_the_field():
    def f(query: BadDefault):
        return "never"

    with pytest.raises(TypeError) as caught:
        StructuredTool(f, description="d")
    assert str(caught.value) == (
        "tool f, parameter query: BadDefault.count: default 'many' does not fit the type: "
        'expected integer, got "many"'
    )


def test_idempotent_is_declared_by_the_decorator_and_checked():
    @tool(idempotent=True)
    def look_up(key: str) -> str:
        """Looks a key up."""
        return key

    assert look_up.idempotent and not Tool.idempotent
    with pytest.raises(tools.errors.ToolTypeError, match="idempotent must be True or False, got 1"):
        StructuredTool(lambda: 1, name="one", description="one", idempotent=1)  # type: ignore[arg-type]
