"""Partial values of a streamed typed result: linear in the reply, never half a character,
the last one the whole value whatever the strategy."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from chainkit import chains, llms
from chainkit.llms.openai.chat import OpenAI
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.openai_server import Call, OpenAIServer, Reply


@dataclass
class Line:
    product: str
    quantity: int


@dataclass
class Order:
    lines: list[Line]
    status: str


def order_reply(count: int) -> tuple[dict[str, Any], str]:
    data = {"lines": [{"product": f"p{i}", "quantity": i} for i in range(count)], "status": "ok"}
    return data, json.dumps(data)


def test_the_partials_of_a_long_list_cost_in_proportion_to_the_reply() -> None:
    data, reply = order_reply(3000)
    partials: list[Any] = []
    llms.generate_object(
        llms.FakeLLM([reply], chunk_size=4), "Go", Order, on_partial=partials.append
    )
    assert partials[-1] == data
    # Each partial copies the list still open: together no more than a few per character.
    copied = sum(len(partial.get("lines", ())) for partial in partials)
    assert copied <= 8 * len(reply)
    # ... while it still grows in small steps.
    assert len(partials) > 100


def test_a_reply_that_streams_no_text_still_ends_with_the_whole_value() -> None:
    data, reply = order_reply(2)
    call = ToolCall("c1", FunctionCall("Order", reply))
    partials: list[Any] = []
    model = llms.FakeLLM([Message.assistant("", [call])])
    llms.generate_object(model, "Go", Order, strategy="tool", on_partial=partials.append)
    assert partials == [data]


def test_a_surrogate_pair_cut_between_chunks_never_reaches_on_partial() -> None:
    reply = '{"lines": [], "status": "\\ud83d\\ude00 ok"}'
    for chunk_size in range(1, 14):
        partials: list[Any] = []
        model = llms.FakeLLM([reply], chunk_size=chunk_size)
        order = llms.generate_object(model, "Go", Order, on_partial=partials.append)
        assert order.status == "\U0001f600 ok"
        statuses = [partial.get("status", "") for partial in partials]
        assert all(
            status in ("", "\U0001f600", "\U0001f600 ", "\U0001f600 o", "\U0001f600 ok")
            for status in statuses
        )
        for status in statuses:
            status.encode("utf-8")  # no lone surrogate


@dataclass
class Note:
    text: str
    tags: list[str] | None = None


def test_the_tool_strategy_sends_strict_where_the_schema_allows(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    _, reply = order_reply(1)
    openai_server.push(
        Reply(tool_calls=[Call("Order", reply)]),
        Reply(tool_calls=[Call("Note", '{"text": "hi"}')]),
    )
    assert llms.generate_object(openai_llm, "Go", Order, strategy="tool").status == "ok"
    assert llms.generate_object(openai_llm, "Go", Note, strategy="tool") == Note("hi")
    closed, open_ = (
        request.body["tools"][0]["function"] for request in openai_server.chat_requests()
    )
    assert closed["strict"] is True
    assert "strict" not in open_  # a field with a default: strict mode would refuse the schema


@dataclass
class Story:
    text: str


def copied_per_character(size: int) -> float:
    """The characters of the growing string that the partials of a `size`-character story
    hold, all together, per character of the reply."""
    reply = json.dumps({"text": "word " * (size // 5)})
    held: list[int] = []
    model = llms.FakeLLM([reply], chunk_size=4)
    llms.generate_object(
        model, "Go", Story, on_partial=lambda story: held.append(len(story["text"]))
    )
    assert held[-1] == len(reply) - len('{"text": ""}')
    return sum(held) / len(reply)


def test_the_partials_of_a_long_string_cost_in_proportion_to_the_reply() -> None:
    # Each partial joins the string so far: made every chunk, that would be quadratic.
    assert copied_per_character(32_000) <= 1.25 * copied_per_character(8_000)


class OrderChain(chains.Chain):
    """A chain that asks its model for an Order: a run that `chains.stream` watches."""

    def __init__(self, llm: llms.Model) -> None:
        self.llm = llm

    @property
    def input_keys(self) -> list[str]:
        return ["question"]

    @property
    def output_keys(self) -> list[str]:
        return ["order"]

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        return {"order": llms.generate_object(self.llm, inputs["question"], Order)}


def test_under_chains_stream_the_partials_cost_in_proportion_to_the_reply_too() -> None:
    data, reply = order_reply(600)
    chain = OrderChain(llms.FakeLLM([reply], chunk_size=4))
    values = [
        event.data["value"]
        for event in chains.stream(chain, {"question": "Go"})
        if event.kind == "partial_object"
    ]
    assert values[-1] == data
    assert sum(len(value.get("lines", ())) for value in values) <= 8 * len(reply)


def test_typed_partials_of_a_long_list_cost_in_proportion_to_the_reply() -> None:
    _, reply = order_reply(3000)
    partials: list[Any] = []
    model = llms.FakeLLM([reply], chunk_size=4)
    order = llms.generate_object(
        model, "Go", Order, on_partial=partials.append, typed_partials=True
    )
    assert partials[-1] == order
    # Each typed partial is built whole: together no more values than a few per character.
    built = sum(1 + 3 * len(partial.lines) for partial in partials)
    assert built <= 4 * len(reply) + 100
    assert len(partials) > 100
