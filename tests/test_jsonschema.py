"""chainkit/_jsonschema: JSON read tolerantly and partially, JSON Schema dicts checked as they
stand, and the shape of a typed result (wrapping, strict mode, paths in problems)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from uuid import UUID

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainkit._jsonschema.dict_schema import DictSchemaSpec
from chainkit._jsonschema.lenient import JSONTextError, find_object, partial_object
from chainkit._jsonschema.output import Invalid, OutputShape
from chainkit._jsonschema.specs import INVALID, ArgumentProblem, UnsupportedTypeError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Here you go: {"a": [1, 2,],} Hope it helps {"b": 2}', {"a": [1, 2]}),
        ('```json\n{"a": "x"}\n```\nand {"b": 1}', {"a": "x"}),
        ('Using {curly} prose first, then {"a": true}', {"a": True}),
        ('{"s": "quote \\" and \\u00e9 and \\n"}', {"s": 'quote " and é and \n'}),
    ],
)
def test_find_object_reads_a_reply_tolerantly(text: str, expected: Any) -> None:
    assert find_object(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no braces at all", "has no '{'"),
        ('{"a": 1', "cut off"),
        ('{"a": nope}', "unexpected 'nope'"),
        ("{" * 300 + "}" * 300, "unexpected|nested too deep|expected a key"),
    ],
)
def test_find_object_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(JSONTextError, match=message):
        find_object(text)


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    with pytest.raises(JSONTextError, match="nested too deep"):
        find_object('{"a": ' + "[" * 1000 + "]" * 1000 + "}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Sure", None),
        ("{", {}),
        ('{"name": "Al', {"name": "Al"}),
        ('{"name": "Al", "ag', {"name": "Al"}),
        ('{"name": "Al", "age":', {"name": "Al"}),
        ('{"tags": ["a", "b', {"tags": ["a", "b"]}),
        ('{"ok": tr', {}),
        ('{"ok": true, "n": -', {"ok": True}),
        ('{"s": "a\\', {"s": "a"}),
        ('{"a": {"b": [1, {"c": null', {"a": {"b": [1, {"c": None}]}}),
    ],
)
def test_partial_object_holds_what_arrived_so_far(text: str, expected: Any) -> None:
    assert partial_object(text) == expected


@given(
    st.dictionaries(
        st.text(max_size=5),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=4), inner, max_size=3)
            ),
            max_leaves=8,
        ),
        max_size=4,
    )
)
def test_every_prefix_of_an_object_reads_and_the_whole_reads_back(value: dict[str, Any]) -> None:
    text = json.dumps(value)
    for end in range(len(text)):
        partial_object(text[:end])  # never raises on a cut-off object
    assert partial_object(text) == value
    assert find_object(text) == value


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
        "kind": {"enum": ["a", "b"]},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "fixed": {"const": 1},
    },
    "required": ["items", "kind"],
    "additionalProperties": False,
    "$defs": {
        "Item": {
            "type": "object",
            "properties": {"price": {"type": "number"}},
            "required": ["price"],
        }
    },
}


def check(schema: dict[str, Any], value: object) -> list[str]:
    problems: list[ArgumentProblem] = []
    result = DictSchemaSpec(schema).coerce(value, "", problems)
    assert (result is INVALID) == bool(problems)
    return [str(problem) for problem in problems]


@pytest.mark.parametrize(
    ("value", "problems"),
    [
        ({"items": [{"price": 1}], "kind": "a", "note": None, "fixed": 1}, []),
        (
            {"items": [{"price": 1}, {"price": "x"}], "kind": "a"},
            ['items[1].price: expected number, got "x"'],
        ),
        (
            {"items": [{}], "kind": "c"},
            ["items[0].price: missing required field", 'kind: expected one of "a", "b", got "c"'],
        ),
        (
            {"items": [], "kind": "a", "other": 1},
            ["other: unknown field (known: items, kind, note, fixed)"],
        ),
        ({"items": [], "kind": "a", "note": 3}, ["note: expected string, got 3"]),
        ({"items": [], "kind": "a", "fixed": True}, ["fixed: expected one of 1, got true"]),
        ([], ["expected object, got []"]),
    ],
)
def test_a_dict_schema_names_each_problem_by_its_path(value: object, problems: list[str]) -> None:
    assert check(SCHEMA, value) == problems
    # The same verdict as the reference validator (a dev dependency only).
    assert jsonschema.Draft202012Validator(SCHEMA).is_valid(value) == (not problems)


def test_a_dict_schema_takes_values_as_they_are() -> None:
    assert check({"type": "integer"}, "3") == ['expected integer, got "3"']
    assert check({"type": "number"}, 3) == []
    assert check({"type": "integer"}, True) == ["expected integer, got true"]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "str"}, "'str' is no JSON type"),
        ({"$ref": "https://example.com/s.json"}, "only local ones"),
        ({"$ref": "#/$defs/Missing"}, "points at nothing"),
    ],
)
def test_a_dict_schema_that_cannot_be_checked_is_refused(
    schema: dict[str, Any], message: str
) -> None:
    with pytest.raises(UnsupportedTypeError, match=message):
        check(schema, {})


@dataclass
class Point:
    x: int
    y: int = 0


def test_a_type_that_is_no_object_is_wrapped_and_unwrapped() -> None:
    shape = OutputShape(list[int])
    assert shape.wrapped and shape.schema["required"] == ["value"]
    assert shape.read({"value": [1, 2]}) == [1, 2]
    invalid = shape.read({"value": [1, "x"]})
    assert isinstance(invalid, Invalid) and str(invalid) == 'value[1]: expected integer, got "x"'


def test_strict_mode_only_for_closed_objects_with_every_property_required() -> None:
    assert OutputShape(list[int]).strict
    assert not OutputShape(Point).strict  # y has a default
    assert not OutputShape(dict[str, int]).strict  # a map object
    assert not OutputShape(SCHEMA).strict  # Item is open


def test_strict_mode_takes_the_string_formats_openai_knows() -> None:
    @dataclass
    class Meeting:
        at: datetime
        on: date
        id: UUID

    assert OutputShape(Meeting).strict
    link = {
        "type": "object",
        "properties": {"url": {"type": "string", "format": "uri"}},
        "required": ["url"],
        "additionalProperties": False,
    }
    assert not OutputShape(link).strict


def test_a_shapes_name_is_one_openai_takes() -> None:
    assert OutputShape(Point).name == "Point"
    assert (
        OutputShape({"title": "my schema!", "type": "object", "properties": {}}).name
        == "my_schema_"
    )
    assert OutputShape(list[int]).name == "list"
