"""chainkit.parsers in pipelines, over HTTP: partial values while the reply streams, the re-ask
of a reply that does not parse, and a typed parser asking through structured output."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from chainkit import chains, llms, parsers, prompts
from chainkit.callbacks.events import Event
from chainkit.llms import OpenAI
from tests.support.modes import Mode
from tests.support.openai_server import OpenAIServer, Reply

P = prompts.PromptTemplate.from_template


def streamed(pipeline: chains.Chain, inputs: Any, is_async: bool) -> list[Event]:
    if not is_async:
        return list(chains.stream(pipeline, inputs))

    async def main() -> list[Event]:
        return [event async for event in chains.astream(pipeline, inputs)]

    return asyncio.run(main())


def partials(events: list[Event]) -> list[Any]:
    return [event.data["value"] for event in events if event.kind == "partial_object"]


@pytest.mark.parametrize("is_async", [False, True])
def test_a_json_parser_gives_growing_objects_as_the_reply_streams(
    is_async: bool, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply('{"name": "Ada", "langs": ["en", "fr"]}', chunk_size=4))
    pipeline = P("{q}") | openai_llm | parsers.JSONParser()
    events = streamed(pipeline, "who?", is_async)
    grown = partials(events)
    assert grown[-1] == {"name": "Ada", "langs": ["en", "fr"]}
    assert {"name": "Ada"} in grown and {"name": "Ada", "langs": ["en"]} in grown
    assert len(grown) == len({repr(value) for value in grown})  # each one new
    assert events[-1].data["outputs"] == {"output": {"name": "Ada", "langs": ["en", "fr"]}}


def test_a_list_parser_gives_each_item_once_it_is_complete(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply("- red\n- green\n- blue", chunk_size=1))
    pipeline = P("{q}") | openai_llm | parsers.ListParser()
    events = list(chains.stream(pipeline, "colours?"))
    assert partials(events) == [["red"], ["red", "green"]]
    assert events[-1].data["outputs"] == {"output": ["red", "green", "blue"]}


def test_a_reply_that_does_not_parse_goes_back_with_the_error(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("maybe", "yes")
    pipeline = P("{q}") | openai_llm | parsers.BooleanParser(max_retries=1)
    assert mode.call(pipeline, {"q": "is it?"}) == {"output": True}
    _, second = openai_server.requests
    sent_back = second.body["messages"]
    assert sent_back[1] == {"role": "assistant", "content": "maybe"}
    assert "maybe" in sent_back[-1]["content"] and sent_back[-1]["role"] == "user"


def test_with_no_retries_the_parse_error_names_what_was_expected(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("maybe")
    pipeline = P("{q}") | openai_llm | parsers.BooleanParser()
    with pytest.raises(parsers.ParseError, match="maybe"):
        mode.call(pipeline, {"q": "is it?"})
    assert len(openai_server.requests) == 1


@dataclass
class City:
    name: str
    population: int


def test_a_typed_parser_asks_through_structured_output(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply.of_json({"name": "Oslo", "population": 700000}))
    pipeline = P("Biggest city of {country}") | openai_llm | parsers.TypedParser(City)
    assert pipeline.output_not_text is not None
    assert mode.call(pipeline, {"country": "Norway"}) == {"output": City("Oslo", 700000)}
    (request,) = openai_server.requests
    assert request.body["response_format"]["type"] == "json_schema"


def test_a_typed_parser_streams_its_partial_values(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply('{"name": "Oslo", "population": 700000}', chunk_size=3))
    pipeline = P("{q}") | openai_llm | parsers.TypedParser(City)
    events = list(chains.stream(pipeline, "?"))
    grown = partials(events)
    assert {"name": "Oslo"} in grown
    assert grown[-1] == {"name": "Oslo", "population": 700000}
    assert events[-1].data["outputs"] == {"output": City("Oslo", 700000)}


def test_a_parser_after_a_function_reads_the_whole_value(mode: Mode) -> None:
    pipeline = (
        P("{q}")
        | llms.FakeLLM(['```json\n{"a": [1, 2]}\n```'])
        | (lambda reply: reply.content)
        | parsers.JSONParser()
    )
    assert mode.call(pipeline, {"q": "?"}) == {"output": {"a": [1, 2]}}
