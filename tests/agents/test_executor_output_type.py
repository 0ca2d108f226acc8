"""Executor(output_type=T): the final answer read into T, an answer that does not fit sent back
to the model, and the schema shown to it."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from chainkit import agents, chains
from chainkit.agents import Executor, OneShotAgent, ToolCallingAgent
from chainkit.agents.errors import PARSE_ERROR_TOOL
from chainkit.chains.errors import OutputNotStringError
from chainkit.llms import FakeLLM
from chainkit.llms.openai.chat import OpenAI
from tests.support.modes import Mode
from tests.support.openai_server import Call, OpenAIServer, Reply
from tests.support.stub_tools import Echo


@dataclass
class Weather:
    city: str
    degrees: float


GOOD = '{"city": "Oslo", "degrees": 4.5}'
BAD = '{"city": "Oslo", "degrees": "cold"}'


def test_the_final_answer_is_the_typed_object(mode: Mode) -> None:
    fake = FakeLLM([f"Thought: done\nFinal Answer: {GOOD}"])
    executor = Executor(OneShotAgent(fake, [Echo()]), output_type=Weather)
    outputs = mode.call(executor, {"input": "Weather in Oslo?"})
    assert outputs["output"] == Weather("Oslo", 4.5)
    prompt = fake.calls[0].messages[-1].content
    assert "Weather in Oslo?\n\nGive your final answer as one JSON object" in prompt
    assert '"degrees": {"type": "number"}' in prompt


def test_an_answer_that_does_not_fit_goes_back_as_an_observation(mode: Mode) -> None:
    fake = FakeLLM([f"Thought: done\nFinal Answer: {BAD}", f"Thought: fixed\nFinal Answer: {GOOD}"])
    executor = Executor(
        OneShotAgent(fake, [Echo()]), output_type=Weather, return_intermediate_steps=True
    )
    outputs = mode.call(executor, {"input": "Weather in Oslo?"})
    assert outputs["output"] == Weather("Oslo", 4.5)
    [step] = outputs["intermediate_steps"]
    assert step.action.tool == PARSE_ERROR_TOOL
    assert 'degrees: expected number, got "cold"' in step.observation
    assert 'degrees: expected number, got "cold"' in fake.calls[1].messages[-1].content


def test_an_answer_that_never_fits_ends_at_the_limit(mode: Mode) -> None:
    fake = FakeLLM([f"Final Answer: {BAD}"] * 2)
    executor = Executor(OneShotAgent(fake, [Echo()]), output_type=Weather, max_iterations=2)
    with pytest.raises(agents.NotFinishedError):
        mode.call(executor, {"input": "Weather?"})


def test_a_final_answer_asked_for_at_the_limit_must_fit_too(mode: Mode) -> None:
    fake = FakeLLM(["Action: echo\nAction Input: hi", f"Final Answer: {BAD}"])
    executor = Executor(
        OneShotAgent(fake, [Echo()]),
        output_type=Weather,
        max_iterations=1,
        early_stopping_method="generate",
    )
    with pytest.raises(agents.OutputParserError, match='degrees: expected number, got "cold"'):
        mode.call(executor, {"input": "Weather?"})


@pytest.mark.parametrize("function", ["run", "predict"])
def test_chains_run_refuses_a_typed_output_before_the_run(mode: Mode, function: str) -> None:
    fake = FakeLLM(["Action: echo\nAction Input: hi", f"Final Answer: {GOOD}"])
    echo = Echo()
    executor = Executor(OneShotAgent(fake, [echo]), output_type=Weather)
    with pytest.raises(OutputNotStringError, match=r"answers with Weather .*use chains\.call"):
        if function == "run":
            mode.run(executor, "Weather?")
        else:
            mode.predict(executor, {"input": "Weather?"})
    assert fake.calls == [] and echo.inputs == []


def test_a_sequence_ending_in_a_typed_executor_is_refused_before_it_runs(mode: Mode) -> None:
    fake = FakeLLM([f"Final Answer: {GOOD}"])
    typed = Executor(OneShotAgent(fake, [Echo()]), output_type=Weather)
    sequence = chains.SequentialChain([typed], input_variables=["input"])
    with pytest.raises(OutputNotStringError, match=r"takes its output from Executor"):
        mode.run(sequence, "Weather?")
    with pytest.raises(chains.ChainWiringError, match=r"chain 0 \(Executor\) answers with"):
        chains.SimpleSequentialChain([typed])
    assert fake.calls == []
    assert mode.call(sequence, {"input": "Weather?"})["output"] == Weather("Oslo", 4.5)


def test_a_type_with_no_schema_is_refused_when_the_executor_is_made() -> None:
    with pytest.raises(agents.AgentTypeError, match=r"output_type .* has no JSON schema"):
        Executor(OneShotAgent(FakeLLM([]), [Echo()]), output_type=set[int])


def test_a_tool_calling_agent_over_http_answers_with_the_object(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(
        Reply(tool_calls=[Call("echo", json.dumps({"text": "Oslo"}))]),
        Reply(BAD),
        Reply(f"Here it is: {GOOD}"),
    )
    executor = Executor(ToolCallingAgent(openai_llm, [Echo()]), output_type=Weather)
    assert mode.call(executor, {"input": "Weather in Oslo?"})["output"] == Weather("Oslo", 4.5)
    last = openai_server.chat_requests()[-1].body["messages"]
    assert any('degrees: expected number, got \\"cold\\"' in json.dumps(m) for m in last)
