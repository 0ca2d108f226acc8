"""chains.stream and chains.astream yield a run's events as they happen, and stop the run when
the consumer stops; FinalAnswerStream picks the final answer out of the tokens."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from chainkit import agents, callbacks, chains, tools
from chainkit.callbacks import Event, FinalAnswerStream
from chainkit.callbacks.final_answer import Piece
from chainkit.llms import FakeLLM, OpenAI
from chainkit.llms.errors import ModelConnectionError
from chainkit.prompts import PromptTemplate
from chainkit.schema import Message
from tests.callbacks.test_runs import TwoToolsThenAnswer
from tests.support.openai_server import OpenAIServer
from tests.support.retried_stream import (
    ANSWER,
    STREAMED_BEFORE_THE_BREAK,
    break_then_answer,
)
from tests.support.retried_stream import mrkl_executor as openai_mrkl_executor
from tests.support.stub_chains import InputOutputChain


class WaitsForTheConsumer(tools.Tool):
    """Ends only once the consumer of the stream has seen its start (or after 10 s)."""

    description = "waits"

    def __init__(self, name: str, seen: threading.Event) -> None:
        self.name = name
        self.seen = seen

    def call(self, input: str) -> str:
        return "released" if self.seen.wait(10) else "timed out"

    async def acall(self, input: str) -> str:
        return await asyncio.to_thread(self.call, input)


def waiting_executor() -> tuple[agents.Executor, dict[str, threading.Event]]:
    seen = {name: threading.Event() for name in ("alpha", "beta")}
    tool_list = [WaitsForTheConsumer(name, event) for name, event in seen.items()]
    agent = agents.ToolCallingAgent(TwoToolsThenAnswer(), tool_list)
    return agents.Executor(agent, return_intermediate_steps=True), seen


def check_live_events(events: list[Event]) -> None:
    kinds = [event.kind for event in events]
    root = events[0]
    assert kinds[0] == "chain_start" and root.parent_id is None
    assert kinds[-1] == "chain_end" and events[-1].run_id == root.run_id
    assert events[-1].data["outputs"]["output"] == "done: q"
    steps = events[-1].data["outputs"]["intermediate_steps"]
    assert [step.observation for step in steps] == ["released", "released"]
    starts = [e for e in events if e.kind == "tool_start"]
    assert sorted(e.name for e in starts) == ["alpha", "beta"]
    assert all(e.parent_id == root.run_id for e in starts)
    assert kinds.count("tool_end") == 2 and kinds.count("llm_end") == 2


@pytest.mark.timeout(30)
def test_stream_yields_a_tool_start_while_the_tool_is_still_running():
    executor, seen = waiting_executor()
    events = []
    for event in chains.stream(executor, "q"):
        events.append(event)
        if event.kind == "tool_start":
            seen[event.name].set()  # the tool may end only now
    check_live_events(events)


@pytest.mark.timeout(30)
def test_astream_yields_a_tool_start_while_the_tool_is_still_running():
    executor, seen = waiting_executor()

    async def consume() -> list[Event]:
        events = []
        async for event in chains.astream(executor, {"input": "q"}):
            events.append(event)
            if event.kind == "tool_start":
                seen[event.name].set()
        return events

    check_live_events(asyncio.run(consume()))


def mrkl_executor(steps: int) -> tuple[agents.Executor, FakeLLM]:
    replies = ["Thought: add\nAction: calculator\nAction Input: 1+1"] * steps
    llm = FakeLLM([*replies, "Thought: done\nFinal Answer: 2"], chunk_size=3)
    return agents.Executor(agents.OneShotAgent(llm, [tools.Calculator()])), llm


@pytest.mark.timeout(30)
def test_tokens_are_events_of_their_model_run():
    executor, _ = mrkl_executor(1)
    events = list(chains.stream(executor, "q"))
    llm_runs = {e.run_id for e in events if e.kind == "llm_start"}
    tokens = [e for e in events if e.kind == "token"]
    assert {e.run_id for e in tokens} == llm_runs and len(llm_runs) == 2
    assert all(e.run_kind == "llm" for e in tokens)
    last = [e.data["text"] for e in tokens if e.run_id == events[-3].run_id]
    assert "".join(last) == "Thought: done\nFinal Answer: 2"
    assert events[-1].data["outputs"] == {"output": "2"}


@pytest.mark.timeout(30)
def test_a_streaming_func_given_still_gets_every_token():
    executor, _ = mrkl_executor(0)
    chunks: list[str] = []
    events = list(chains.stream(executor, "q", streaming_func=chunks.append))
    assert "".join(chunks) == "Thought: done\nFinal Answer: 2"
    assert [e.data["text"] for e in events if e.kind == "token"] == chunks


@pytest.mark.timeout(30)
def test_breaking_early_stops_the_run_before_the_next_model_call():
    executor, llm = mrkl_executor(5)
    stream = chains.stream(executor, "q")
    for event in stream:
        if event.kind == "tool_start":
            break
    stream.close()  # what leaving the loop does once the generator is dropped
    assert len(llm.calls) == 1


@pytest.mark.timeout(30)
def test_closing_the_async_stream_cancels_the_run():
    # A blocking tool, as most are: the run awaits it in a thread, so the consumer gets to read
    # between steps. (A run that never awaits, with a model that answers at once and tools that
    # run inline, cannot be interleaved by any event loop: it ends before anyone reads.)
    replies = ["Thought: add\nAction: calculator\nAction Input: 1+1"] * 5
    llm = FakeLLM([*replies, "Thought: done\nFinal Answer: 2"], chunk_size=3)
    calculator = tools.Calculator()
    calculator.blocking = True
    executor = agents.Executor(agents.OneShotAgent(llm, [calculator]))

    async def consume() -> int:
        stream = chains.astream(executor, "q")
        async for event in stream:
            if event.kind == "tool_end":
                break
        await stream.aclose()
        calls = len(llm.calls)
        for _ in range(20):  # room for a run left going to call the model again
            await asyncio.sleep(0)
        assert len(llm.calls) == calls
        return calls

    # The task runs on between two reads of the consumer: it may have called once more.
    assert asyncio.run(consume()) in (1, 2)


@pytest.mark.timeout(30)
def test_cancelling_the_consumer_cancels_the_run():
    executor, llm = mrkl_executor(50)

    async def consume(first: asyncio.Event) -> None:
        async for event in chains.astream(executor, "q"):
            if event.kind == "tool_end":
                first.set()
                await asyncio.sleep(30)

    async def main() -> None:
        first = asyncio.Event()
        task = asyncio.ensure_future(consume(first))
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The abandoned generator is closed by the loop's finalizer, a few iterations later.
        for _ in range(20):
            await asyncio.sleep(0)
        calls = len(llm.calls)
        for _ in range(50):
            await asyncio.sleep(0)
        assert len(llm.calls) == calls

    asyncio.run(main())
    assert len(llm.calls) < 50


class Failing(InputOutputChain):
    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        raise ValueError(f"cannot do {inputs['input']}")

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        return self._call(inputs)


@pytest.mark.timeout(30)
def test_a_failed_run_yields_its_error_then_raises():
    seen: list[Event] = []
    with pytest.raises(ValueError, match="cannot do x"):
        seen.extend(chains.stream(Failing(), "x"))
    assert [e.kind for e in seen] == ["chain_start", "chain_error"]
    assert isinstance(seen[-1].data["error"], ValueError)

    async def consume() -> list[str]:
        return [e.kind async for e in chains.astream(Failing(), "x")]

    with pytest.raises(ValueError, match="cannot do x"):
        asyncio.run(consume())


@pytest.mark.timeout(30)
def test_bad_input_raises_the_same_error_as_chains_call():
    with pytest.raises(chains.errors.MissingInputKeysError):
        list(chains.stream(Failing(), {"other": 1}))
    with pytest.raises(chains.errors.InputsTypeError):
        list(chains.stream(Failing(), 3))  # type: ignore[arg-type]
    with pytest.raises(callbacks.errors.HandlerTypeError):
        list(chains.stream(Failing(), "x", callbacks="loud"))  # type: ignore[arg-type]


@pytest.mark.timeout(30)
def test_llm_chain_streams_its_tokens():
    chain = chains.LLMChain(PromptTemplate.from_template("{q}"), FakeLLM(["héllo wörld ✓"]))
    events = list(chains.stream(chain, "q"))
    text = "".join(e.data["text"] for e in events if e.kind == "token")
    assert text == "héllo wörld ✓"
    assert events[-1].data["outputs"]["text"] == text


def token_events(chunks: list[str], run_id: str = "r1") -> list[Event]:
    return [Event("token", run_id, "root", "llm", "m", {"text": c}, 0.0) for c in chunks]


@pytest.mark.parametrize(
    "chunks",
    [
        ["Thought: done\nFinal Answer: 4", "2 is it"],
        ["Thought: done\nFin", "al Ans", "wer", ":", " ", "42 ", "is it"],
        ["F", "i", "n", "a", "l", " ", "A", "n", "s", "w", "e", "r", ":", "42 is it"],
        ["Final Answer:  ", "", "  42 is it"],
    ],
)
def test_final_answer_stream_finds_a_keyword_split_across_tokens(chunks):
    pieces = list(FinalAnswerStream(token_events(chunks)))
    assert "".join(map(str, pieces)) == "42 is it"
    assert all(pieces)


def test_final_answer_stream_keeps_each_reply_apart():
    events = [*token_events(["Final "], "a"), *token_events(["Answer: no"], "b")]
    assert list(FinalAnswerStream(events)) == []


@pytest.mark.timeout(30)
def test_final_answer_stream_over_a_real_run_sync_and_async():
    executor, _ = mrkl_executor(2)
    assert list(FinalAnswerStream(chains.stream(executor, "q"))) == ["2"]
    executor, _ = mrkl_executor(2)

    async def consume() -> list[Piece]:
        return [t async for t in FinalAnswerStream(chains.astream(executor, "q"))]

    assert asyncio.run(consume()) == ["2"]


@pytest.mark.timeout(60)
def test_a_retried_model_call_is_a_retry_event_of_its_model_run_sync_and_async(
    openai_server: OpenAIServer, openai_llm: OpenAI, arun
):
    def check(events: list[Event]) -> None:
        [retry] = [e for e in events if e.kind == "retry"]
        [llm_start] = [e for e in events if e.kind == "llm_start"]
        assert retry.run_id == llm_start.run_id and retry.run_kind == "llm"
        assert retry.data["attempt"] == 1 and type(retry.data["error"]) is ModelConnectionError
        assert retry.data["wait"] == pytest.approx(0.001, abs=0.01)  # the tests' fast backoff
        assert retry.data["discarded"] == STREAMED_BEFORE_THE_BREAK
        tokens = [e.data["text"] for e in events if e.kind == "token"]
        before = events.index(retry) - events.index(llm_start) - 1
        assert "".join(tokens[:before]) == STREAMED_BEFORE_THE_BREAK
        assert "".join(tokens[before:]) == f"Final Answer: {ANSWER}"
        assert events[-1].data["outputs"]["output"] == ANSWER

    executor = openai_mrkl_executor(openai_llm)
    break_then_answer(openai_server)
    check(list(chains.stream(executor, "q")))

    async def consume() -> list[Event]:
        return [event async for event in chains.astream(executor, "q")]

    break_then_answer(openai_server)
    check(arun(openai_llm, consume()))


@pytest.mark.timeout(30)
def test_breaking_at_a_parallel_tool_start_stops_the_run_and_its_tools():
    executor, seen = waiting_executor()
    for name in seen:
        seen[name].set()  # the tools end at once
    model = executor.agent.llm  # type: ignore[attr-defined]
    calls: list[int] = []
    original = model._generate

    def counted(request: Any) -> Message:
        calls.append(1)
        reply: Message = original(request)
        return reply

    model._generate = counted
    stream = chains.stream(executor, "q")
    for event in stream:
        if event.kind == "tool_start":
            break
    stream.close()
    assert calls == [1]  # the model was not asked again after the tools


@pytest.mark.timeout(30)
def test_openai_streams_its_tokens_and_stops_at_a_break(openai_server, openai_llm):
    openai_server.push("one two three four", "never asked")
    chain = chains.LLMChain(PromptTemplate.from_template("{q}"), openai_llm)
    events = list(chains.stream(chain, "q"))
    tokens = [e.data["text"] for e in events if e.kind == "token"]
    assert len(tokens) > 1 and "".join(tokens) == "one two three four"
    assert openai_server.requests[-1].body.get("stream") is True
    stream = chains.stream(chain, "q")
    for event in stream:
        if event.kind == "token":
            break
    stream.close()
    assert len(openai_server.requests) == 2  # stopped, not retried
