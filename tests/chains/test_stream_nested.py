"""An agent run inside a tool streams into the outer chains.stream: its events and its tokens,
nested under the tool's run, whether the tool runs it directly or in a thread of its own pool
(callbacks.ContextThreadPoolExecutor)."""

from __future__ import annotations

import asyncio

import pytest

from chainkit import agents, callbacks, chains, tools
from chainkit.callbacks import Event
from chainkit.llms import FakeLLM
from tests.support.event_recorder import EventRecorder

INNER_REPLY = "Thought: I know it\nFinal Answer: inner says hi"


def inner_executor() -> agents.Executor:
    llm = FakeLLM([INNER_REPLY], chunk_size=5)
    return agents.Executor(agents.OneShotAgent(llm, [tools.Calculator()]))


class AsksAnAgent(tools.Tool):
    """Answers with what an agent of its own answers, run here or in a pool's thread."""

    name = "ask_agent"
    description = "asks another agent"

    def __init__(self, in_pool: bool) -> None:
        self.in_pool = in_pool

    def call(self, input: str) -> str:
        if not self.in_pool:
            return chains.run(inner_executor(), input)
        with callbacks.ContextThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(chains.run, inner_executor(), input).result(timeout=30)


def outer_executor(in_pool: bool) -> agents.Executor:
    llm = FakeLLM(
        ["Thought: ask\nAction: ask_agent\nAction Input: hello", "Final Answer: ok"], chunk_size=7
    )
    return agents.Executor(agents.OneShotAgent(llm, [AsksAnAgent(in_pool)]))


def check_nested(events: list[Event]) -> None:
    """The inner agent's run sits under the tool's, its model's under it, and every token
    of the inner model's reply came through, as events of that model's run."""
    assert events[-1].kind == "chain_end" and events[-1].data["outputs"] == {"output": "ok"}
    [tool] = [e for e in events if e.kind == "tool_start"]
    [inner] = [e for e in events if e.kind == "chain_start" and e.parent_id == tool.run_id]
    [inner_model] = [e for e in events if e.kind == "llm_start" and e.parent_id == inner.run_id]
    tokens = [e for e in events if e.kind == "token" and e.run_id == inner_model.run_id]
    assert "".join(e.data["text"] for e in tokens) == INNER_REPLY and len(tokens) > 1
    assert all(e.parent_id == inner.run_id for e in tokens)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("in_pool", [False, True], ids=["in the tool", "in the tool's pool"])
def test_an_agent_inside_a_tool_streams_its_tokens_into_the_outer_stream(in_pool: bool):
    check_nested(list(chains.stream(outer_executor(in_pool), "q")))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("in_pool", [False, True], ids=["in the tool", "in the tool's pool"])
def test_an_agent_inside_a_tool_streams_its_tokens_into_the_outer_astream(in_pool: bool):
    async def consume() -> list[Event]:
        return [event async for event in chains.astream(outer_executor(in_pool), "q")]

    check_nested(asyncio.run(consume()))


@pytest.mark.timeout(60)
def test_the_wish_for_tokens_ends_with_the_stream(events: EventRecorder):
    list(chains.stream(outer_executor(in_pool=True), "q"))
    assert chains.run(inner_executor(), "q", callbacks=events) == "inner says hi"
    assert events.heard("streaming_func") == []  # a plain run streams only when asked to
