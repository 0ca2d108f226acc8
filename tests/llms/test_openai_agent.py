"""Whole agent runs over real HTTP: the agents drive the OpenAI backend against the loopback
server, through faults, with one tool and with several."""

from __future__ import annotations

import pytest

from chainkit import agents, chains, tools
from chainkit.llms import CallOptions
from chainkit.llms.openai.chat import OpenAI
from tests.support.openai_server import Call, Fault, OpenAIServer, Reply

STOP = ["\nObservation:", "\n\tObservation:"]


class Recording(tools.Tool):
    """Answers from a table and records every input it was called with."""

    def __init__(self, name: str, description: str, answers: dict[str, str]) -> None:
        self.name = name
        self.description = description
        self.answers = answers
        self.inputs: list[str] = []

    def call(self, input: str) -> str:
        self.inputs.append(input)
        return self.answers.get(input, f"no answer for {input!r}")


def weather() -> Recording:
    return Recording("weather", "Current weather in a city", {"Paris": "sunny, 24 C"})


def clock() -> Recording:
    return Recording("clock", "Local time in a city", {"Paris": "12:00"})


def calculator() -> Recording:
    return Recording("calculator", "Evaluates arithmetic", {"24 * 2": "48"})


def prompt_of(server: OpenAIServer, request: int) -> str:
    return str(server.chat_requests()[request].body["messages"][0]["content"])


def test_oneshot_agent_run(openai_server: OpenAIServer, openai_llm: OpenAI) -> None:
    tool = weather()
    openai_server.push(
        " I need the weather in Paris.\nAction: weather\nAction Input: Paris",
        " I now know the final answer.\nFinal Answer: It is sunny in Paris, 24 C.",
    )
    executor = agents.Executor(agents.OneShotAgent(openai_llm, [tool]), max_iterations=5)

    answer = chains.run(executor, "What is the weather in Paris?")

    assert answer == "It is sunny in Paris, 24 C."
    assert tool.inputs == ["Paris"]
    requests = openai_server.chat_requests()
    assert len(requests) == 2
    assert [r.body["stop"] for r in requests] == [STOP, STOP]
    assert "What is the weather in Paris?" in prompt_of(openai_server, 0)
    assert "Observation: sunny, 24 C" not in prompt_of(openai_server, 0)
    assert prompt_of(openai_server, 1).count("Observation: sunny, 24 C") == 1


def test_oneshot_agent_run_with_several_tools(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    used = [weather(), clock(), calculator()]
    openai_server.push(
        " First the weather.\nAction: weather\nAction Input: Paris",
        " Now the time.\nAction: clock\nAction Input: Paris",
        " Double the temperature.\nAction: calculator\nAction Input: 24 * 2",
        " I now know the final answer.\nFinal Answer: sunny at 12:00; twice 24 is 48",
    )
    executor = agents.Executor(agents.OneShotAgent(openai_llm, used), max_iterations=5)

    answer = chains.run(executor, "Weather, time, and twice the temperature in Paris?")

    assert answer == "sunny at 12:00; twice 24 is 48"
    assert [t.inputs for t in used] == [["Paris"], ["Paris"], ["24 * 2"]]
    last = prompt_of(openai_server, 3)
    for observation in ("sunny, 24 C", "12:00", "48"):
        assert last.count(f"Observation: {observation}\n") == 1


def test_faults_between_steps_neither_repeat_nor_lose_a_step(
    openai_server: OpenAIServer, make_openai
) -> None:
    # Each tool, when called, breaks the model request that follows it.
    class Faulty(Recording):
        def __init__(self, base: Recording, fault: Fault) -> None:
            super().__init__(base.name, base.description, base.answers)
            self.fault = fault

        def call(self, input: str) -> str:
            openai_server.fail(self.fault)
            return super().call(input)

    llm = make_openai(timeout=0.3)
    used = [Faulty(weather(), Fault.http(503)), Faulty(clock(), Fault.slow(2.0))]
    openai_server.fail(Fault.http(429, headers={"Retry-After": "0"}))
    openai_server.push(
        " Weather first.\nAction: weather\nAction Input: Paris",
        " Then the time.\nAction: clock\nAction Input: Paris",
        " I now know the final answer.\nFinal Answer: sunny at noon",
    )
    executor = agents.Executor(agents.OneShotAgent(llm, used), max_iterations=5)

    assert chains.run(executor, "Weather and time in Paris?") == "sunny at noon"
    assert [t.inputs for t in used] == [["Paris"], ["Paris"]]
    assert len(openai_server.chat_requests()) == 6  # 3 replies, each after one fault
    last = prompt_of(openai_server, 5)
    assert last.count("Observation: sunny, 24 C\n") == 1
    assert last.count("Observation: 12:00\n") == 1


def test_tool_calling_agent_with_parallel_calls(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    used = [weather(), clock()]
    openai_server.push(
        Reply(
            "",
            tool_calls=[
                Call("weather", '{"input": "Paris"}', id="call_w"),
                Call("clock", '{"input": "Paris"}', id="call_c"),
            ],
        ),
        "Sunny and noon in Paris.",
    )
    agent = agents.ToolCallingAgent(openai_llm, used)

    answer = chains.run(agents.Executor(agent, max_iterations=5), "Weather and time in Paris?")

    assert answer == "Sunny and noon in Paris."
    assert [t.inputs for t in used] == [["Paris"], ["Paris"]]
    first, second = openai_server.chat_requests()
    assert [t["function"]["name"] for t in first.body["tools"]] == ["weather", "clock"]
    assert second.body["messages"][-3:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_w",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"input": "Paris"}'},
                },
                {
                    "id": "call_c",
                    "type": "function",
                    "function": {"name": "clock", "arguments": '{"input": "Paris"}'},
                },
            ],
        },
        {"role": "tool", "content": "sunny, 24 C", "tool_call_id": "call_w"},
        {"role": "tool", "content": "12:00", "tool_call_id": "call_c"},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_truncated_tool_arguments_become_an_observation(
    openai_server: OpenAIServer, openai_llm: OpenAI, stream: bool
) -> None:
    tool = weather()
    openai_server.push(
        Reply("", tool_calls=[Call("weather", '{"input": "Par')], finish_reason="length"),
        "I could not check the weather.",
    )
    executor = agents.Executor(agents.ToolCallingAgent(openai_llm, [tool]), max_iterations=3)
    options = CallOptions(streaming_func=lambda _: None) if stream else CallOptions()

    answer = chains.run(executor, "Weather in Paris?", **options)

    assert answer == "I could not check the weather."
    assert tool.inputs == []
    assert [r.body.get("stream", False) for r in openai_server.chat_requests()] == [stream] * 2
    observation = openai_server.chat_requests()[1].body["messages"][-1]
    assert observation["role"] == "tool"
    assert observation["content"].startswith("Invalid arguments for tool weather")


def test_async_oneshot_agent_run_through_a_fault(
    openai_server: OpenAIServer, openai_llm: OpenAI, arun
) -> None:
    used = [weather(), clock()]
    openai_server.push(
        " Weather.\nAction: weather\nAction Input: Paris",
        " Time.\nAction: clock\nAction Input: Paris",
        " I now know the final answer.\nFinal Answer: sunny at noon",
    )
    openai_server.fail(Fault.drop())
    executor = agents.Executor(agents.OneShotAgent(openai_llm, used), max_iterations=5)

    answer = arun(openai_llm, chains.arun(executor, "Weather and time in Paris?"))

    assert answer == "sunny at noon"
    assert [t.inputs for t in used] == [["Paris"], ["Paris"]]
    assert len(openai_server.chat_requests()) == 4
