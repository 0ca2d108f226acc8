"""Typed results of the types pydantic users send every day, over real HTTP to the loopback
server: a list of models, a model inside a dataclass, recursive models and dataclasses, dates,
times, UUIDs and decimals. The schema each request carries is checked with a real JSON Schema
validator (every `$ref` must point at a definition in it, and the reply sent must fit it), and
the value comes back as the type."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import pydantic
import pytest

from chainkit import llms
from chainkit.llms.openai.chat import OpenAI
from chainkit.tools import StructuredTool
from tests.support.openai_server import Call, OpenAIServer, Reply


class Owner(pydantic.BaseModel):
    name: str


class Pet(pydantic.BaseModel):
    kind: str
    owner: Owner


class Folder(pydantic.BaseModel):
    name: str
    folders: list[Folder] = []


@dataclass
class Adoption:
    pet: Pet
    note: str


@dataclass
class Tree:
    value: int
    children: list[Tree] = field(default_factory=list)


@dataclass
class Invoice:
    number: uuid.UUID
    issued: datetime.datetime
    due: datetime.date
    opens: datetime.time
    total: decimal.Decimal
    paid_on: datetime.date | None = None


PETS = [{"kind": "cat", "owner": {"name": "Ann"}}, {"kind": "dog", "owner": {"name": "Bo"}}]
FOLDERS = {"name": "root", "folders": [{"name": "a", "folders": [{"name": "b"}]}]}
TREE = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4}]}
INVOICE_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")
INVOICE = {
    "number": str(INVOICE_ID),
    "issued": "2026-12-06T15:30:00Z",
    "due": "2027-01-05",
    "opens": "09:00:00",
    "total": "1234.50",
}


def sent_schema(server: OpenAIServer) -> dict[str, Any]:
    """The schema of the last request's response format, checked as JSON Schema: a validator
    that meets a `$ref` pointing at nothing raises."""
    body = server.chat_requests()[-1].body
    schema: dict[str, Any] = body["response_format"]["json_schema"]["schema"]
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def fits(schema: dict[str, Any], value: Any) -> None:
    jsonschema.Draft202012Validator(schema).validate(value)


@pytest.mark.parametrize(
    ("output_type", "reply", "expected"),
    [
        pytest.param(
            list[Pet],
            {"value": PETS},
            [Pet(kind="cat", owner=Owner(name="Ann")), Pet(kind="dog", owner=Owner(name="Bo"))],
            id="list of models",
        ),
        pytest.param(
            Adoption,
            {"pet": PETS[0], "note": "calm"},
            Adoption(Pet(kind="cat", owner=Owner(name="Ann")), "calm"),
            id="model in a dataclass",
        ),
        pytest.param(
            Folder,
            FOLDERS,
            Folder(name="root", folders=[Folder(name="a", folders=[Folder(name="b")])]),
            id="recursive model",
        ),
        pytest.param(
            Tree,
            TREE,
            Tree(1, [Tree(2, [Tree(3)]), Tree(4)]),
            id="recursive dataclass",
        ),
        pytest.param(
            list[Tree],
            {"value": [TREE, {"value": 5}]},
            [Tree(1, [Tree(2, [Tree(3)]), Tree(4)]), Tree(5)],
            id="list of recursive dataclasses",
        ),
        pytest.param(
            Invoice,
            INVOICE,
            Invoice(
                INVOICE_ID,
                datetime.datetime(2026, 12, 6, 15, 30, tzinfo=datetime.UTC),
                datetime.date(2027, 1, 5),
                datetime.time(9, 0),
                decimal.Decimal("1234.50"),
            ),
            id="dates, times, a UUID and a decimal",
        ),
    ],
)
def test_the_schema_sent_resolves_and_the_reply_comes_back_as_the_type(
    openai_server: OpenAIServer,
    openai_llm: OpenAI,
    output_type: Any,
    reply: Any,
    expected: Any,
) -> None:
    openai_server.push(Reply.of_json(reply))
    assert llms.generate_object(openai_llm, "Answer", output_type) == expected
    fits(sent_schema(openai_server), reply)


def test_the_tool_strategy_sends_the_definitions_with_the_tool(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply(tool_calls=[Call("Folder", json.dumps(FOLDERS))]))
    result = llms.generate_object(openai_llm, "Answer", Folder, strategy="tool")
    assert result.folders[0].folders[0].name == "b"
    [tool] = openai_server.chat_requests()[-1].body["tools"]
    fits(tool["function"]["parameters"], FOLDERS)


def test_a_recursive_dataclass_refuses_a_deep_wrong_value_by_its_path(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    wrong = {"value": 1, "children": [{"value": 2, "children": [{"value": "three"}]}]}
    openai_server.push(Reply.of_json(wrong), Reply.of_json(TREE))
    result = llms.generate_object(openai_llm, "Answer", Tree, include_raw=True)
    assert result.value == Tree(1, [Tree(2, [Tree(3)]), Tree(4)])
    [rejected] = result.rejected
    assert rejected.problems == ('children[0].children[0].value: expected integer, got "three"',)


@pytest.mark.parametrize(
    ("field_name", "wrong"),
    [
        ("number", "not-a-uuid"),
        ("issued", "yesterday"),
        ("due", "2027-13-40"),
        ("total", "NaN"),
        ("total", True),
    ],
)
def test_a_date_uuid_or_decimal_the_model_got_wrong_is_sent_back_named(
    openai_server: OpenAIServer, openai_llm: OpenAI, field_name: str, wrong: object
) -> None:
    openai_server.push(Reply.of_json({**INVOICE, field_name: wrong}), Reply.of_json(INVOICE))
    result = llms.generate_object(openai_llm, "Answer", Invoice, include_raw=True)
    assert result.value.number == INVOICE_ID
    [rejected] = result.rejected
    [problem] = rejected.problems
    assert problem.startswith(f"{field_name}: expected ")


def test_a_decimal_given_as_a_json_number_keeps_its_digits(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply.of_json({**INVOICE, "total": 0.1}))
    assert llms.generate_object(openai_llm, "Answer", Invoice).total == decimal.Decimal("0.1")


@dataclass
class Meeting:
    day: datetime.date = datetime.date(2027, 1, 5)


def test_a_date_default_is_advertised_in_iso_form() -> None:
    def book(meeting: Meeting) -> str:
        """Books a meeting."""
        return meeting.day.isoformat()

    made = StructuredTool(book)
    day = made.parameters["properties"]["meeting"]["properties"]["day"]
    assert day == {"type": "string", "format": "date", "default": "2027-01-05"}
    assert made.call(json.dumps({"meeting": {}})) == "2027-01-05"


@dataclass
class Chain:
    tag: str
    next: Chain | None = None


@dataclass
class OtherChain:
    label: int
    next: OtherChain | None = None


OtherChain.__name__ = "Chain"  # two recursive types of one name, as two modules may have


@dataclass
class Chains:
    mine: Chain
    theirs: OtherChain


def test_two_recursive_types_of_one_name_keep_two_definitions() -> None:
    def take(both: Chains) -> str:
        """Takes both."""
        return f"{both.mine.next and both.mine.next.tag} {both.theirs.label}"

    made = StructuredTool(take)
    parameters = made.parameters
    jsonschema.Draft202012Validator.check_schema(parameters)
    value = {"both": {"mine": {"tag": "x", "next": {"tag": "y"}}, "theirs": {"label": 1}}}
    fits(parameters, value)
    swapped = {"both": {"mine": {"tag": "x", "next": {"label": 2}}, "theirs": {"label": 1}}}
    with pytest.raises(jsonschema.ValidationError):
        fits(parameters, swapped)
    assert sorted(parameters["$defs"]) == ["Chain", "Chain_2"]
    assert made.call(json.dumps(value)) == "y 1"
