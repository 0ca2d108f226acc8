"""Executor behaviour the other executor tests left open, found by mutation testing
(bench/mutation.py): what a plan under `max_execution_time` passes on to the model (its tokens,
the time left); an async step's tool call (its input, its name, its StopIteration); and that a
failed async call returns only once its sibling calls have stopped; the agent's own handler
silenced with the rest at the deadline; the call options reaching an async final answer."""

from __future__ import annotations

import asyncio
import time

import pytest

from chainkit import EscapedStopError, chains, tools
from chainkit.agents import Executor, NotFinishedError, OneShotAgent, ToolCallingAgent
from chainkit.agents.errors import AgentConfigError
from chainkit.llms import FakeLLM
from chainkit.memory import ConversationBuffer
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.agents.test_executor_hostile import Pairs, SlowModel
from tests.support.stub_tools import Echo

ANSWER = " I now know\nFinal Answer: forty-two"


@pytest.mark.timeout(30)
def test_tokens_stream_while_planning_under_a_deadline(mode):
    executor = Executor(
        OneShotAgent(FakeLLM([ANSWER], chunk_size=5), [Echo()]), max_execution_time=60
    )
    streamed: list[str] = []
    assert mode.run(executor, "q", streaming_func=streamed.append) == "forty-two"
    assert "".join(streamed) == ANSWER and len(streamed) > 1


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("given", "most"), [(None, 60), (5, 5), (600, 60)])
def test_a_sync_plan_gets_the_time_left_or_the_shorter_timeout_given(given, most):
    fake = FakeLLM([ANSWER])
    executor = Executor(OneShotAgent(fake, [Echo()]), max_execution_time=60)
    options = {} if given is None else {"timeout": given}
    assert chains.run(executor, "q", **options) == "forty-two"
    timeout = fake.calls[0].options["timeout"]
    assert most - 10 < timeout <= most


class Stops(tools.Tool):
    name = "stops"
    description = "raises StopIteration"

    def call(self, input):
        raise StopIteration("early")


@pytest.mark.timeout(30)
def test_a_tool_raising_stop_iteration_ends_the_run_with_an_error_naming_the_tool(mode):
    reply = " I act\nAction: stops\nAction Input: x"
    executor = Executor(OneShotAgent(FakeLLM([reply]), [Stops()]))
    with pytest.raises(EscapedStopError) as raised:
        mode.run(executor, "q")
    assert str(raised.value) == "tool 'stops' raised StopIteration: early"
    assert isinstance(raised.value.__cause__, StopIteration)


def test_memory_the_agent_does_not_read_is_refused_naming_the_agent():
    agent = OneShotAgent(FakeLLM([]), [Echo()])
    with pytest.raises(AgentConfigError, match=r"^OneShotAgent does not read memory variable"):
        Executor(agent, memory=ConversationBuffer())


@pytest.mark.timeout(30)
def test_an_async_mrkl_step_gives_the_tool_its_text_and_reports_it_by_its_own_name(events):
    script = [" I act\nAction: ECHO\nAction Input: hello", ANSWER]
    executor = Executor(
        OneShotAgent(FakeLLM(script), [Echo()]), return_intermediate_steps=True, callbacks=events
    )
    outputs = asyncio.run(chains.acall(executor, {"input": "q"}))
    assert [step.observation for step in outputs["intermediate_steps"]] == ["echo: hello"]
    assert events.heard("tool_start") == [("tool_start", "echo", "hello", None)]


class Fails(tools.Tool):
    name = "fails"
    description = "fails once the other call has started"

    async def acall(self, input):
        await asyncio.sleep(0)
        raise KeyError(input)


class Waits(tools.Tool):
    name = "waits"
    description = "waits until cancelled, then cleans up"

    def __init__(self):
        self.stopped = False

    async def acall(self, input):
        try:
            await asyncio.sleep(30)
        finally:
            for _ in range(3):  # cleaning up takes a few turns of the loop, as closing does
                await asyncio.sleep(0)
            self.stopped = True
        return "late"


@pytest.mark.timeout(30)
def test_a_failed_async_call_returns_only_once_its_siblings_have_stopped():
    waits = Waits()
    reply = Message.assistant(
        "",
        [
            ToolCall("a", FunctionCall("waits", '{"input": "1"}')),
            ToolCall("b", FunctionCall("fails", '{"input": "2"}')),
        ],
    )
    executor = Executor(ToolCallingAgent(FakeLLM([reply]), [waits, Fails()]))

    async def main():
        with pytest.raises(KeyError):
            await chains.arun(executor, "q")
        return waits.stopped  # before asyncio.run would cancel what is left

    assert asyncio.run(main())


@pytest.mark.timeout(30, method="thread")
def test_the_agents_own_handler_hears_nothing_of_a_plan_after_its_deadline():
    model, heard = SlowModel(), Pairs()
    agent = OneShotAgent(model, [Echo()], callbacks=heard)
    executor = Executor(agent, max_execution_time=0.5)
    try:
        with pytest.raises(NotFinishedError):
            chains.run(executor, "q")
    finally:
        model.release.set()
    assert model.finished.wait(10)
    time.sleep(0.05)  # what the abandoned call reports after its end is dropped
    [(_, error)] = heard.of("llm", "error")
    assert str(error) == (
        "max_execution_time=0.5s reached before the call returned; it was abandoned"
    )
    assert heard.of("llm", "end") == []
    heard.assert_paired()


@pytest.mark.timeout(30)
def test_an_async_final_answer_after_the_last_step_gets_the_call_options():
    fake = FakeLLM([" I act\nAction: echo\nAction Input: x", ANSWER])
    executor = Executor(
        OneShotAgent(fake, [Echo()]), max_iterations=1, early_stopping_method="generate"
    )
    assert asyncio.run(chains.arun(executor, "q", temperature=0.25)) == "forty-two"
    assert [call.options.get("temperature") for call in fake.calls] == [0.25, 0.25]
