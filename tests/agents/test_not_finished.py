"""NotFinishedError says what the steps were spent on, built from the steps it carries."""

from __future__ import annotations

import json

import pytest

from chainkit import agents, tools
from chainkit.agents import NotFinishedError
from chainkit.agents.errors import PARSE_ERROR_TOOL, spent_on
from chainkit.llms import FakeLLM
from chainkit.schema import AgentAction, AgentStep, FunctionCall, Message, ToolCall
from tests.support.modes import Mode


def act(tool: str, tool_input: str) -> str:
    return f" I should use {tool}.\nAction: {tool}\nAction Input: {tool_input}"


class Search(tools.Tool):
    name = "search"
    description = "searches the web"

    def call(self, input: str) -> str:
        return f"nothing found for {input}"


def not_finished(replies: list[str | Message], agent_type: str = "mrkl", *, mode: Mode):
    fake = FakeLLM(replies)
    tool_list = [tools.Calculator(), Search()]
    agent = (
        agents.OneShotAgent(fake, tool_list)
        if agent_type == "mrkl"
        else agents.ToolCallingAgent(fake, tool_list)
    )
    executor = agents.Executor(
        agent, max_iterations=len(replies), error_handler=agents.ParserErrorHandler()
    )
    with pytest.raises(NotFinishedError) as caught:
        mode.run(executor, "q")
    return str(caught.value)


def test_unparsable_replies_are_named_with_the_last_one(mode: Mode) -> None:
    message = not_finished(["I think", "no idea", "still\nno format"], mode=mode)
    assert message == (
        "agent not finished: reached max_iterations=3; all 3 replies of the model could not "
        "be parsed; the last was 'still\\nno format' (Invalid Format: Missing 'Action:' after "
        "'Thought:')"
    )


def test_tool_calls_are_counted_by_tool_with_repeats_and_the_last_observation(
    mode: Mode,
) -> None:
    replies: list[str | Message] = [
        act("search", "weather"),
        act("calculator", "2+2"),
        act("search", "weather"),
        act("search", "news"),
        act("calculator", "3*3"),
    ]
    assert not_finished(replies, mode=mode) == (
        "agent not finished: reached max_iterations=5; 5 tool calls: search ×3, calculator ×2 "
        "(1 repeating an earlier call with the same input); the last observation, from "
        "calculator, was '9'"
    )


def test_parallel_tool_calls_count_each_call(mode: Mode) -> None:
    def calls(*names: str, first: int = 0) -> Message:
        return Message.assistant(
            "",
            [
                ToolCall(f"c{i}", FunctionCall(name, json.dumps({"input": f"{i}+1"})))
                for i, name in enumerate(names, first)
            ],
        )

    message = not_finished(
        [calls("search", "search", "calculator"), calls("search", first=3)],
        "tool_calling",
        mode=mode,
    )
    assert message == (
        "agent not finished: reached max_iterations=2; 4 tool calls: search ×3, calculator ×1; "
        "the last observation, from search, was 'nothing found for 3+1'"
    )


def test_mixed_steps_end_with_the_last_reply_when_it_was_unparsable() -> None:
    message = not_finished([act("search", "x"), "garbage"], mode=Mode("sync"))
    assert message.endswith(
        "1 tool call: search ×1, and 1 reply that could not be parsed; the last reply was 'garbage'"
    )


def test_long_texts_are_cut_and_no_steps_is_said() -> None:
    huge = "x" * 100_000
    steps = [AgentStep(AgentAction("search", "q", "log"), huge)]
    assert len(spent_on(steps)) < 400
    unparsed = AgentStep(AgentAction(PARSE_ERROR_TOOL, "bad\n" * 1000, huge), "bad")
    assert len(spent_on([unparsed])) < 600
    assert spent_on([]) == "no step was taken"
    error = NotFinishedError("reached max_execution_time=1s", [])
    assert str(error) == "agent not finished: reached max_execution_time=1s; no step was taken"
