"""Typed partials (`typed_partials=True`: partial values built into the type) and `on_item`
(a list result handed on item by item, as Instructor's `create_iterable` does)."""

from __future__ import annotations

import itertools
import json
from typing import Any, NotRequired, TypedDict

import pydantic
import pytest

from chainkit import llms
from chainkit.llms.openai.chat import OpenAI
from tests.llms.test_structured import Item, Order
from tests.support.modes import Mode
from tests.support.openai_server import OpenAIServer, Reply

ORDER = {"items": [{"name": "tea", "price": 2.5}, {"name": "cake", "price": 4}], "status": "open"}


def test_typed_partials_are_instances_with_the_fields_not_there_yet_none(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply.of_json(ORDER, chunk_size=3))
    partials: list[Any] = []
    order = mode.generate_object(
        openai_llm, "Go", Order, on_partial=partials.append, typed_partials=True
    )
    assert all(isinstance(partial, Order) for partial in partials)
    assert Order([Item("tea", None)], None) in partials  # type: ignore[arg-type]
    assert Order([Item("tea", 2.5), Item("ca", None)], None) in partials  # type: ignore[arg-type]
    # "op" is no status yet: the status stays None until it reads as one.
    assert not any(partial.status not in (None, "open") for partial in partials)
    assert partials[-1] == order == Order([Item("tea", 2.5), Item("cake", 4.0)], "open")
    assert all(before != after for before, after in itertools.pairwise(partials))


class Owner(pydantic.BaseModel):
    name: str
    age: int


class Pet(pydantic.BaseModel):
    name: str
    legs: int
    owner: Owner | None = None


class Person(TypedDict):
    name: str
    pets: list[Item]
    age: NotRequired[int]


def test_a_typed_partial_pydantic_model_leaves_what_has_not_come_unset() -> None:
    reply = json.dumps({"name": "Rex", "legs": 4, "owner": {"name": "Ada", "age": 36}})
    partials: list[Any] = []
    model = llms.FakeLLM([reply], chunk_size=2)
    pet = llms.generate_object(model, "Go", Pet, on_partial=partials.append, typed_partials=True)
    assert partials[-1] == pet
    first = partials[0]
    assert isinstance(first, Pet) and first.model_fields_set == {"name"}
    owners = [partial.owner for partial in partials if partial.owner]
    assert all(isinstance(owner, Owner) for owner in owners)
    assert [owner.model_fields_set for owner in owners][:2] == [set(), {"name"}]
    assert owners[-1] == Owner(name="Ada", age=36)


def test_a_typed_partial_typed_dict_holds_the_keys_that_came() -> None:
    reply = json.dumps({"name": "Ada", "pets": [{"name": "Rex", "price": 1}], "age": 36})
    partials: list[Any] = []
    model = llms.FakeLLM([reply], chunk_size=5)
    llms.generate_object(model, "Go", Person, on_partial=partials.append, typed_partials=True)
    assert {"name": "Ada", "pets": [Item("Rex", None)]} in partials  # type: ignore[arg-type]
    assert partials[-1] == {"name": "Ada", "pets": [Item("Rex", 1.0)], "age": 36}


def test_on_item_hands_on_each_item_as_soon_as_it_is_whole(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    items = [{"name": f"item {i}", "price": i} for i in range(5)]
    openai_server.push(Reply.of_json({"value": items}, chunk_size=4))
    heard: list[Any] = []
    result = mode.generate_object(
        openai_llm,
        "Go",
        list[Item],
        on_item=lambda item: heard.append(("item", item)),
        streaming_func=lambda text: heard.append(("text", text)),
    )
    assert result == [Item(f"item {i}", float(i)) for i in range(5)]
    assert [item for kind, item in heard if kind == "item"] == result
    # Each item comes before the text of the item after it has all arrived.
    for index in range(4):
        position = heard.index(("item", result[index]))
        text = "".join(piece for kind, piece in heard[:position] if kind == "text")
        assert json.dumps(items[index]) in text
        assert json.dumps(items[index + 1]) not in text


def test_on_item_hands_on_each_item_once_across_re_asks() -> None:
    model = llms.FakeLLM(
        [
            '{"value": [{"name": "a", "price": 1}, {"name": "b", "price": "x"}, '
            '{"name": "c", "price": 3}]}',
            '{"value": [{"name": "a", "price": 1}, {"name": "b", "price": 2}, '
            '{"name": "c", "price": 3}]}',
        ]
    )
    heard: list[Item] = []
    result = llms.generate_object(model, "Go", list[Item], on_item=heard.append)
    # The item that did not read held back the ones after it; the re-ask went on from there.
    assert heard == result == [Item("a", 1.0), Item("b", 2.0), Item("c", 3.0)]
    assert len(model.calls) == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"on_item": print}, "on_item hears the items of a list: output_type must be list"),
        ({"typed_partials": "yes"}, "typed_partials must be True or False"),
    ],
)
def test_streaming_options_that_cannot_work_are_refused_before_any_call(
    options: dict[str, Any], message: str
) -> None:
    model = llms.FakeLLM([])
    with pytest.raises(llms.errors.ModelTypeError, match=message):
        llms.generate_object(model, "Go", Order, **options)
    assert model.calls == []
