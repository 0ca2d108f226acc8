"""parsers.TypedParser: a reply read into any output type generate_object takes, by the same
schema and validator; streamed, the JSON data so far."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainkit import parsers
from chainkit._jsonschema.output import SCHEMA_MARK, OutputShape
from chainkit.parsers.errors import ParserTypeError
from tests.parsers.streaming import CUTS, by_character, partials, pieces


@dataclass
class Item:
    name: str
    price: float


class Person(TypedDict):
    name: str
    age: int


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class City(pydantic.BaseModel):
    name: str
    people: int


@pytest.mark.parametrize(
    ("output_type", "text", "value"),
    [
        (Item, 'Sure: {"name": "tea", "price": 2.5}', Item("tea", 2.5)),
        (Person, '```json\n{"name": "Ana", "age": 3,}\n```', {"name": "Ana", "age": 3}),
        (Colour, '{"value": "blue"}', Colour.BLUE),
        (Colour, '"red"', Colour.RED),
        (Literal["a", "b"], '{"value": "b"}', "b"),
        (list[int], "[1, 2, 3]", [1, 2, 3]),
        (list[Item], '```json\n[{"name": "a", "price": 1}]\n```', [Item("a", 1.0)]),
        (Item | Person, '{"name": "Ana", "age": 3}', {"name": "Ana", "age": 3}),
        ({"type": "object", "properties": {"n": {"type": "integer"}}}, '{"n": 1}', {"n": 1}),
        (City, '{"name": "Oslo", "people": 700000}', City(name="Oslo", people=700000)),
    ],
)
def test_every_output_type_is_read(output_type: Any, text: str, value: object) -> None:
    parser = parsers.TypedParser(output_type)
    assert parser.parse(text) == value
    assert parser.output_type is output_type
    assert parser.max_retries == 2 and parser.strategy is None


def test_a_reply_that_does_not_fit_names_each_problem_by_its_path() -> None:
    with pytest.raises(parsers.ParseError) as raised:
        parsers.TypedParser(list[Item]).parse('{"value": [{"name": "a", "price": "cheap"}]}')
    assert str(raised.value) == (
        "TypedParser(list[Item]) expected JSON that fits list[Item], got "
        '\'{"value": [{"name": "a", "price": "cheap"}]}\' '
        '(value[0].price: expected number, got "cheap")'
    )
    with pytest.raises(parsers.ParseError, match="no JSON object in the reply"):
        parsers.TypedParser(Item).parse("I don't know")


def test_the_instructions_are_the_prompted_strategys_with_the_same_schema() -> None:
    instructions = parsers.TypedParser(list[Item]).instructions()
    assert SCHEMA_MARK in instructions
    assert '"required": ["value"]' in instructions
    assert str(OutputShape(list[Item]).schema["properties"]["value"]["type"]) in instructions


def test_streamed_each_partial_is_the_json_data_so_far_unwrapped() -> None:
    text = '{"value": [{"name": "ab", "price": 1}]}'
    assert partials(parsers.TypedParser(list[Item]), by_character(text)) == [
        [],
        [{}],
        [{"name": ""}],
        [{"name": "a"}],
        [{"name": "ab"}],
        [{"name": "ab", "price": 1}],
    ]


@given(st.lists(st.tuples(st.text(max_size=6), st.integers(0, 99)), max_size=5), CUTS)
def test_any_cutting_ends_with_the_parsed_data(
    rows: list[tuple[str, int]], cuts: list[int]
) -> None:
    import json

    data = [{"name": name, "price": price} for name, price in rows]
    text = json.dumps({"value": data})
    parser = parsers.TypedParser(list[Item])
    found = partials(parser, pieces(text, cuts))
    assert found[-1] == data
    assert parser.parse(text) == [Item(name, float(price)) for name, price in rows]


def test_a_type_with_no_json_schema_is_refused_when_built_naming_it() -> None:
    with pytest.raises(
        ParserTypeError, match=r"TypedParser output_type set\[int\] has no JSON schema"
    ):
        parsers.TypedParser(set[int])
    with pytest.raises(ParserTypeError, match="strategy must be a strategy's name or None"):
        parsers.TypedParser(Item, strategy=3)  # type: ignore[arg-type]
