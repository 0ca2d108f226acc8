"""Tools' examples shown to the model: as worked MRKL steps in a OneShotAgent's prompt, as
example arguments in a ToolCallingAgent's tool descriptions; within `example_tokens`, and only
for the tools offered."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chainkit import agents, chains, tools
from chainkit._tokens import text_tokens
from chainkit.agents import mrkl_prompt as mrkl_prompt_text
from chainkit.agents._tool_examples import mrkl_example
from chainkit.agents.errors import AgentConfigError, AgentTypeError
from chainkit.agents.mrkl import create_mrkl_prompt
from chainkit.agents.mrkl_parser import parse_mrkl_output
from chainkit.llms import FakeLLM
from chainkit.schema import AgentAction, AgentFinish, Message


class Weather(tools.Tool):
    name = "get_weather"
    description = "Current weather for a city."
    examples: tuple[tools.ToolExample, ...] = (
        tools.ToolExample("Paris", "12 °C, rain", "It is 12 °C and raining in Paris."),
        tools.ToolExample("東京"),
    )

    def call(self, input: str) -> str:
        return f"weather({input})"


class Song(tools.Tool):
    name = "play_song"
    description = "Plays a song by an artist."
    examples = (tools.ToolExample("Nina Simone", "playing"),)

    def call(self, input: str) -> str:
        return f"song({input})"


@tools.tool(examples=[tools.ToolExample({"a": 2, "b": 3}, "5", "2 + 3 = 5")])
def add(a: int, b: int = 0) -> int:
    """Adds two whole numbers."""
    return a + b


class Plain(tools.Tool):
    name = "get_weather"
    description = "Current weather for a city."

    def call(self, input: str) -> str:
        return input


def mrkl_prompt(agent: agents.OneShotAgent, offered: list[tools.Tool] | None = None) -> str:
    request = agent.plan_request([], {"input": "q"}, offered, False)
    return "\n".join(message.content for message in request.messages)


def descriptions(
    agent: agents.ToolCallingAgent, offered: list[tools.Tool] | None = None
) -> dict[str, str]:
    request = agent.plan_request([], {"input": "q"}, offered, False)
    return {info.name: info.description for info in request.tools or ()}


def test_a_rendered_mrkl_example_reads_back_as_its_action_and_answer() -> None:
    for tool, example in [
        (Weather(), Weather.examples[0]),
        (Weather(), Weather.examples[1]),
        (add, add.examples[0]),
    ]:
        text = mrkl_example(tool, example)
        call, _, rest = text.partition("\nObservation: ")
        action = parse_mrkl_output(call)
        assert isinstance(action, AgentAction)
        assert action.tool == tool.name
        read = (
            action.tool_input if isinstance(example.input, str) else json.loads(action.tool_input)
        )
        assert read == example.input
        if example.answer is not None:
            assert rest.startswith(f"{example.observation}\n")
            finish = parse_mrkl_output(rest.split("\n", 1)[1])
            assert isinstance(finish, AgentFinish)
            assert finish.return_values["output"] == example.answer


def test_oneshot_prompt_shows_each_tools_examples_after_the_descriptions() -> None:
    prompt = mrkl_prompt(agents.OneShotAgent(FakeLLM(["x"]), [Weather(), add]))
    assert "Examples of using the tools:" in prompt
    for tool, example in [(Weather(), Weather.examples[0]), (add, add.examples[0])]:
        assert mrkl_example(tool, example) in prompt
    assert prompt.index("add: Adds two whole numbers.") < prompt.index("Action: get_weather")


def test_a_tool_without_examples_changes_nothing_in_the_prompt() -> None:
    parts = (mrkl_prompt_text.PREFIX, mrkl_prompt_text.FORMAT_INSTRUCTIONS, mrkl_prompt_text.SUFFIX)
    before = "\n\n".join(parts).format(
        tool_descriptions="get_weather: Current weather for a city.",
        tool_names="get_weather",
        input="q",
        agent_scratchpad="",
    )
    assert create_mrkl_prompt([Plain()]).format(input="q", agent_scratchpad="") == before
    assert mrkl_prompt(agents.OneShotAgent(FakeLLM(["x"]), [Plain()])) == before
    assert "Example" not in before
    agent = agents.ToolCallingAgent(FakeLLM(["x"]), [Plain()])
    assert descriptions(agent) == {"get_weather": "Current weather for a city."}


def test_examples_beyond_the_budget_are_left_out_whole_first_examples_first() -> None:
    first = [mrkl_example(Weather(), Weather.examples[0]), mrkl_example(Song(), Song.examples[0])]
    second = mrkl_example(Weather(), Weather.examples[1])
    fits_two = sum(map(text_tokens, first))
    prompt = mrkl_prompt(
        agents.OneShotAgent(FakeLLM(["x"]), [Weather(), Song()], example_tokens=fits_two)
    )
    # Each tool's first example comes before any tool's second.
    assert all(text in prompt for text in first)
    assert second not in prompt
    assert "Action Input: 東京" not in prompt
    short = agents.OneShotAgent(FakeLLM(["x"]), [Weather(), Song()], example_tokens=fits_two - 1)
    assert first[0] in mrkl_prompt(short) and "Nina Simone" not in mrkl_prompt(short)
    nothing = agents.OneShotAgent(FakeLLM(["x"]), [Weather(), Song()], example_tokens=0)
    assert "Examples" not in mrkl_prompt(nothing)


@pytest.mark.parametrize("kind", [agents.OneShotAgent, agents.ToolCallingAgent])
def test_a_budget_that_is_no_count_of_tokens_is_refused(kind: Any) -> None:
    with pytest.raises(AgentTypeError, match="example_tokens must be a whole number"):
        kind(FakeLLM(["x"]), [Weather()], example_tokens=1.5)
    with pytest.raises(AgentConfigError, match="example_tokens must be 0 or more, got -1"):
        kind(FakeLLM(["x"]), [Weather()], example_tokens=-1)


def test_a_bad_example_refuses_the_agent_naming_the_tool() -> None:
    @tools.tool(name="adder", examples=[tools.ToolExample({"a": "two"})])
    def adder(a: int) -> int:
        """Adds."""
        return a

    for kind in (agents.OneShotAgent, agents.ToolCallingAgent):
        with pytest.raises(AgentConfigError, match="tool 'adder': example 0 does not fit"):
            kind(FakeLLM(["x"]), [Weather(), adder])


@pytest.mark.parametrize(("text", "read"), [("  Paris ", "Paris"), ('"Paris"', "Paris")])
def test_oneshot_refuses_an_example_its_parser_would_read_otherwise(text: str, read: str) -> None:
    class Quoted(Weather):
        examples = (tools.ToolExample(text),)

    with pytest.raises(AgentConfigError, match="tool 'get_weather': example 0's input") as caught:
        agents.OneShotAgent(FakeLLM(["x"]), [Quoted()])
    assert f"reads back from a MRKL reply as {read!r}" in str(caught.value)
    agents.ToolCallingAgent(FakeLLM(["x"]), [Quoted()])  # its arguments are sent as written


def test_tool_calling_descriptions_carry_the_example_arguments() -> None:
    agent = agents.ToolCallingAgent(FakeLLM(["x"]), [Weather(), add])
    described = descriptions(agent)
    assert described["get_weather"] == (
        'Current weather for a city.\nExample arguments:\n{"input": "Paris"}\n{"input": "東京"}'
    )
    assert described["add"] == 'Adds two whole numbers.\nExample arguments:\n{"a": 2, "b": 3}'
    # The tools' own infos are left as they were.
    assert Weather().info().description == "Current weather for a city."


def test_examples_are_shown_only_for_the_offered_tools() -> None:
    tool_list: list[tools.Tool] = [Weather(), Song(), add]
    retriever = tools.ToolRetriever(tool_list)
    oneshot = agents.OneShotAgent(FakeLLM(["x"]), tool_list, tool_retriever=retriever)
    prompt = mrkl_prompt(oneshot, [tool_list[1]])
    assert "Action: play_song" in prompt and "get_weather" not in prompt and "add" not in prompt
    calling = agents.ToolCallingAgent(FakeLLM(["x"]), tool_list, tool_retriever=retriever)
    assert descriptions(calling, [tool_list[1]]) == {
        "play_song": 'Plays a song by an artist.\nExample arguments:\n{"input": "Nina Simone"}'
    }


@pytest.mark.parametrize("kind", ["oneshot", "tool_calling"])
def test_with_a_retriever_only_the_chosen_tools_examples_reach_the_model(kind: str) -> None:
    tool_list: list[tools.Tool] = [Weather(), Song(), add]
    retriever = tools.ToolRetriever(tool_list, top_k=1)
    if kind == "oneshot":
        llm = FakeLLM(["Thought: done\nFinal Answer: ok"])
        agent: agents.BaseAgent = agents.OneShotAgent(llm, tool_list, tool_retriever=retriever)
    else:
        llm = FakeLLM([Message.assistant("ok")])
        agent = agents.ToolCallingAgent(llm, tool_list, tool_retriever=retriever)
    chains.run(agents.Executor(agent), "play a song by an artist")
    (call,) = llm.calls
    sent = "\n".join(message.content for message in call.messages)
    sent += "\n".join(info.description for info in call.options.get("tools") or ())
    assert "Nina Simone" in sent
    assert "Paris" not in sent and "東京" not in sent and '"a": 2' not in sent
