"""Executor(output_type=T): the final answer asked for and read into T by the engine of
`llms.generate_object` (the final-answer tool for native tool calling, the prompted
strategy's instructions for MRKL, its rejections for an answer that does not fit, its
strategies and refusals for the answer asked for at a limit)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from chainkit import agents, chains
from chainkit import tools as tools_module
from chainkit._jsonschema.output import SCHEMA_MARK
from chainkit.agents import Executor, OneShotAgent, ToolCallingAgent
from chainkit.agents.errors import PARSE_ERROR_TOOL
from chainkit.chains.errors import OutputNotStringError
from chainkit.llms import FakeLLM
from chainkit.llms.openai.chat import OpenAI
from tests.agents.test_agent_kind import LineAgent
from tests.agents.test_executor_hostile import CustomAgent
from tests.support.modes import Mode
from tests.support.openai_server import Call, Fault, OpenAIServer, Reply
from tests.support.stub_tools import Echo, named


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
    instructions, prompt = fake.calls[0].messages
    # The prompted strategy's instructions, in the system message; the question untouched.
    assert instructions.role == "system" and SCHEMA_MARK in instructions.content
    assert '"degrees": {"type": "number"}' in instructions.content
    assert "Question: Weather in Oslo?\nThought:" in prompt.content


def test_an_answer_that_does_not_fit_goes_back_as_an_observation(mode: Mode) -> None:
    fake = FakeLLM([f"Thought: done\nFinal Answer: {BAD}", f"Thought: fixed\nFinal Answer: {GOOD}"])
    executor = Executor(
        OneShotAgent(fake, [Echo()]), output_type=Weather, return_intermediate_steps=True
    )
    outputs = mode.call(executor, {"input": "Weather in Oslo?"})
    assert outputs["output"] == Weather("Oslo", 4.5)
    [step] = outputs["intermediate_steps"]
    assert step.action.tool == PARSE_ERROR_TOOL
    # generate_object's rejection, after the reply as the model wrote it.
    assert step.observation.startswith("Your answer did not fit the schema: degrees: expected")
    scratchpad = fake.calls[1].messages[-1].content
    assert f"Final Answer: {BAD}\nObservation: Your answer did not fit" in scratchpad


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
    with pytest.raises(chains.errors.ChainWiringError, match=r"chain 0 \(Executor\) answers with"):
        chains.SimpleSequentialChain([typed])
    assert fake.calls == []
    assert mode.call(sequence, {"input": "Weather?"})["output"] == Weather("Oslo", 4.5)


def test_a_type_with_no_schema_is_refused_when_the_executor_is_made() -> None:
    with pytest.raises(agents.errors.AgentTypeError, match=r"output_type .* has no JSON schema"):
        Executor(OneShotAgent(FakeLLM([]), [Echo()]), output_type=set[int])


def test_a_tool_calling_agent_over_http_answers_with_text_read_tolerantly(
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
    assert last[-2] == {"role": "assistant", "content": BAD}
    assert 'degrees: expected number, got \\"cold\\"' in json.dumps(last[-1])


def test_a_tool_calling_agent_ends_the_run_with_the_final_answer_tool(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    echo = Echo()
    openai_server.push(
        Reply(tool_calls=[Call("echo", json.dumps({"input": "Oslo"}))]),
        # The answer ends the run: a call beside it does not run.
        Reply(tool_calls=[Call("final_answer", GOOD), Call("echo", '{"input": "again"}')]),
    )
    executor = Executor(ToolCallingAgent(openai_llm, [echo]), output_type=Weather)
    assert mode.call(executor, {"input": "Weather in Oslo?"})["output"] == Weather("Oslo", 4.5)
    assert echo.inputs == ["Oslo"]
    for request in openai_server.chat_requests():
        offered = {tool["function"]["name"]: tool["function"] for tool in request.body["tools"]}
        assert set(offered) == {"echo", "final_answer"}
        assert offered["final_answer"]["parameters"]["properties"]["degrees"] == {"type": "number"}
        assert offered["final_answer"]["strict"] is True
        assert "tool_choice" not in request.body  # free to call its own tools first


def test_a_final_answer_call_that_does_not_fit_is_answered_once_and_asked_again(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(
        Reply(tool_calls=[Call("final_answer", BAD, id="call_bad"), Call("echo", "{}")]),
        Reply(tool_calls=[Call("final_answer", GOOD)]),
    )
    executor = Executor(
        ToolCallingAgent(openai_llm, [Echo()]), output_type=Weather, return_intermediate_steps=True
    )
    outputs = mode.call(executor, {"input": "Weather in Oslo?"})
    assert outputs["output"] == Weather("Oslo", 4.5)
    [step] = outputs["intermediate_steps"]
    assert (step.action.tool, step.action.tool_call_id) == (PARSE_ERROR_TOOL, "call_bad")
    asked_again = openai_server.chat_requests()[1].body["messages"]
    replies = [m for m in asked_again if m["role"] == "assistant"]
    answers = [m for m in asked_again if m["role"] == "tool"]
    # The rejected reply once, cut to the answer's call, which the rejection answers.
    assert [call["id"] for reply in replies for call in reply["tool_calls"]] == ["call_bad"]
    [answer] = answers
    assert answer["tool_call_id"] == "call_bad"
    assert answer["content"].startswith("Your answer did not fit the schema: degrees: expected")
    assert asked_again[-1] == answer


def test_a_mrkl_agent_over_http_gives_the_typed_answer(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(
        Reply("Thought: look it up\nAction: echo\nAction Input: Oslo"),
        Reply(f"Thought: done\nFinal Answer: {GOOD}"),
    )
    executor = Executor(OneShotAgent(openai_llm, [Echo()]), output_type=Weather)
    assert mode.call(executor, {"input": "Weather in Oslo?"})["output"] == Weather("Oslo", 4.5)
    for request in openai_server.chat_requests():
        system = request.body["messages"][0]
        assert system["role"] == "system" and SCHEMA_MARK in system["content"]
        assert "response_format" not in request.body and "tools" not in request.body


class _RefusingFromNowOn(tools_module.Tool):
    """A tool whose call makes the server refuse the next request's response_format."""

    name = "lookup"
    description = "looks the weather up"

    def __init__(self, server: OpenAIServer) -> None:
        self.server = server

    def call(self, input: str) -> str:
        self.server.fail(Fault.http(400, "response_format json_schema is not supported"))
        return "4.5 degrees"


def test_a_refused_strategy_at_the_limit_moves_to_the_next_as_generate_object_does(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(
        Reply(tool_calls=[Call("lookup", json.dumps({"input": "Oslo"}))]),
        Reply(tool_calls=[Call("Weather", GOOD)]),
    )
    executor = Executor(
        ToolCallingAgent(openai_llm, [_RefusingFromNowOn(openai_server)]),
        output_type=Weather,
        max_iterations=1,
        early_stopping_method="generate",
    )
    assert mode.call(executor, {"input": "Weather in Oslo?"})["output"] == Weather("Oslo", 4.5)
    _, refused, answered = [r.body for r in openai_server.chat_requests()]
    assert refused["response_format"]["type"] == "json_schema" and "tools" not in refused
    assert answered["tool_choice"]["function"]["name"] == "Weather"
    assert [t["function"]["name"] for t in answered["tools"]] == ["Weather"]


def test_the_typed_answer_at_the_limit_is_not_held_to_the_agents_grammar(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Thought: look\nAction: echo\nAction Input: Oslo", Reply(GOOD))
    executor = Executor(
        OneShotAgent(openai_llm, [Echo()], constrain="grammar"),
        output_type=Weather,
        max_iterations=1,
        early_stopping_method="generate",
    )
    assert mode.call(executor, {"input": "Weather in Oslo?"})["output"] == Weather("Oslo", 4.5)
    planned, final = [r.body for r in openai_server.chat_requests()]
    assert "grammar" in planned
    assert "grammar" not in final and final["response_format"]["type"] == "json_schema"


def test_a_kind_of_agent_of_your_own_gets_the_typed_answer_too(mode: Mode) -> None:
    fake = FakeLLM([f"answer {BAD}", f"answer {GOOD}"])
    executor = Executor(LineAgent(fake, [Echo()]), output_type=Weather)
    assert mode.call(executor, {"input": "Weather in Oslo?"})["output"] == Weather("Oslo", 4.5)
    instructions, _ = fake.calls[0].messages
    assert SCHEMA_MARK in instructions.content
    assert "Your answer did not fit the schema" in fake.calls[1].messages[-1].content


def test_an_agent_that_is_no_base_agent_is_refused_an_output_type() -> None:
    with pytest.raises(agents.errors.AgentTypeError, match=r"subclasses agents\.BaseAgent"):
        Executor(CustomAgent([Echo()]), output_type=Weather)


def test_a_tool_named_like_the_final_answer_tool_is_refused() -> None:
    agent = ToolCallingAgent(FakeLLM([]), [named("final_answer", "x")])
    with pytest.raises(agents.errors.AgentConfigError, match="'final_answer'"):
        Executor(agent, output_type=Weather)
