"""Pipelines streamed end to end: the model's tokens as they come, a parser's partial values,
every step a run nested under the pipeline (events, trace file, log); closing the stream stops
the steps not yet started."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import pytest

from chainkit import callbacks, chains, llms, prompts
from chainkit.callbacks.events import Event
from chainkit.llms import OpenAI
from tests.support.openai_server import OpenAIServer, Reply

P = prompts.PromptTemplate.from_template


class GrowingJSON:
    """A parser whose partial reader gives the value so far each time it parses whole: enough
    to pin how the pipeline hands a reply to a parser; chainkit.parsers' own are tested with
    the parsers."""

    output_type = dict

    def parse(self, text: str) -> Any:
        return json.loads(text)

    def reader(self) -> Any:
        class Reader:
            text = ""

            def feed(self, chunk: str) -> list[Any]:
                self.text += chunk
                try:
                    return [json.loads(self.text)]
                except ValueError:
                    return []

        return Reader()


def kinds_and_names(events: list[Event]) -> list[tuple[str, str]]:
    return [(event.kind, event.name) for event in events if event.kind != "token"]


def collect(pipeline: chains.Chain, inputs: Any, is_async: bool) -> list[Event]:
    if not is_async:
        return list(chains.stream(pipeline, inputs))

    async def main() -> list[Event]:
        return [event async for event in chains.astream(pipeline, inputs)]

    return asyncio.run(main())


@pytest.mark.parametrize("is_async", [False, True])
def test_tokens_then_partial_values_then_each_steps_end_in_order(
    is_async: bool, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply("[1, [2, 3]]", chunk_size=1))
    pipeline = P("{q}") | openai_llm | GrowingJSON() | (lambda value: value[1])
    events = collect(pipeline, "numbers", is_async)
    assert kinds_and_names(events) == [
        ("chain_start", "Pipeline"),
        ("chain_start", "PromptTemplate"),
        ("chain_end", "PromptTemplate"),
        ("llm_start", "loopback-model"),
        ("partial_object", "loopback-model"),
        ("llm_end", "loopback-model"),
        ("chain_start", "GrowingJSON"),
        ("chain_end", "GrowingJSON"),
        ("chain_start", "<lambda>"),
        ("chain_end", "<lambda>"),
        ("chain_end", "Pipeline"),
    ]
    tokens = [event.data["text"] for event in events if event.kind == "token"]
    assert "".join(tokens) == "[1, [2, 3]]" and len(tokens) == 11
    (partial,) = [event for event in events if event.kind == "partial_object"]
    assert partial.data["value"] == [1, [2, 3]]
    assert events[-1].data["outputs"] == {"output": [2, 3]}


def test_every_step_is_a_run_nested_under_the_pipeline() -> None:
    pipeline = P("{q}") | llms.FakeLLM(["x"]) | {"a": str.upper, "b": str.lower}
    events = list(chains.stream(pipeline, "go"))
    root = events[0]
    by_name = {event.name: event for event in events if event.kind in ("chain_start", "llm_start")}
    assert by_name["PromptTemplate"].parent_id == root.run_id
    assert by_name["FakeLLM"].parent_id == root.run_id
    assert by_name["Parallel"].parent_id == root.run_id
    assert by_name["upper"].parent_id == by_name["Parallel"].run_id
    assert by_name["lower"].parent_id == by_name["Parallel"].run_id
    assert by_name["upper"].data["inputs"] == {"input": "x"}


def test_the_log_and_the_trace_file_show_the_steps(tmp_path: Any) -> None:
    shown = io.StringIO()
    trace = tmp_path / "trace.jsonl"
    pipeline = P("{q}") | llms.FakeLLM(["reply"]) | str.upper
    with callbacks.TraceFile(trace) as traced:
        assert (
            chains.run(pipeline, "go", callbacks=[callbacks.LogHandler(shown), traced]) == "REPLY"
        )
    log = shown.getvalue()
    for step in ("chain start: Pipeline", "  chain start: PromptTemplate", "  llm start: user: go"):
        assert step in log
    assert "  chain end: upper outputs={'output': 'REPLY'}" in log
    assert "  chain end: PromptTemplate outputs={'output': ['user: go']}" in log
    names = [json.loads(line).get("name") for line in trace.read_text().splitlines()]
    assert {"Pipeline", "PromptTemplate", "FakeLLM", "upper"} <= set(names)


def test_closing_the_stream_stops_the_steps_not_yet_started(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply("a long reply that streams slowly", chunk_size=2))
    reached: list[str] = []

    def after(reply: Any) -> str:
        reached.append(reply.content)
        return str(reply.content)

    pipeline = P("{q}") | openai_llm | after
    with chains.stream(pipeline, "go") as stream:
        for event in stream:
            if event.kind == "token":
                break
    assert reached == []


def test_a_step_that_cannot_stream_gives_its_value_whole(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply('{"a": 1}', chunk_size=2))
    pipeline = P("{q}") | openai_llm | (lambda reply: reply.content) | GrowingJSON()
    events = list(chains.stream(pipeline, "go"))
    assert [event for event in events if event.kind == "partial_object"] == []
    assert events[-1].data["outputs"] == {"output": {"a": 1}}


def test_a_streaming_func_given_to_the_call_hears_the_model_beside_the_parser(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply('{"a": 1}', chunk_size=3))
    pieces: list[str] = []
    pipeline = P("{q}") | openai_llm | GrowingJSON()
    assert chains.call(pipeline, {"q": "go"}, streaming_func=pieces.append) == {"output": {"a": 1}}
    assert "".join(pieces) == '{"a": 1}'


def test_closing_an_async_stream_cancels_the_steps_not_yet_started(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply("a long reply that streams slowly", chunk_size=2))
    reached: list[str] = []

    async def after(reply: Any) -> str:
        reached.append(reply.content)
        return str(reply.content)

    pipeline = P("{q}") | openai_llm | after

    async def main() -> None:
        async with chains.astream(pipeline, "go") as stream:
            async for event in stream:
                if event.kind == "token":
                    break
        await asyncio.sleep(0.05)  # a step still running would reach `after` meanwhile

    asyncio.run(main())
    assert reached == []


@pytest.mark.parametrize("is_async", [False, True])
def test_a_run_racing_ahead_of_its_reader_waits_before_each_step(is_async: bool) -> None:
    # FakeLLM streams at once, in the run's own thread or task: only waiting for the reader
    # between steps keeps the step after it from running once the reader has stopped.
    reached: list[str] = []

    def after(reply: Any) -> str:
        reached.append(reply.content)
        return str(reply.content)

    pipeline = P("{q}") | llms.FakeLLM(["several words streamed"], chunk_size=1) | after
    if is_async:

        async def main() -> None:
            async with chains.astream(pipeline, "go") as stream:
                async for event in stream:
                    if event.kind == "token":
                        break

        asyncio.run(main())
    else:
        with chains.stream(pipeline, "go") as stream:
            for event in stream:
                if event.kind == "token":
                    break
    assert reached == []
