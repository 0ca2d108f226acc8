"""Executor settings are checked when it is built, naming the setting, what it takes and what
was given; LangChain's AgentExecutor arguments get a pointer to chainkit's; a tool error
observed under handle_tool_errors keeps its type."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest

from chainkit import ChainkitError, agents, chains, tools
from chainkit.agents import Executor, NotFinishedError, OneShotAgent, _deadline
from chainkit.agents.errors import AgentConfigError, AgentTypeError
from chainkit.llms import FakeLLM
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.modes import Mode
from tests.support.stub_tools import named


def agent() -> OneShotAgent:
    return OneShotAgent(FakeLLM([" done\nFinal Answer: ok"]), [named("echo", "echoed")])


BAD_SETTINGS: list[tuple[str, Any, type[Exception], str]] = [
    ("max_iterations", "5", AgentTypeError, "max_iterations must be a whole number of steps"),
    ("max_iterations", 2.5, AgentTypeError, "got float 2.5"),
    ("max_iterations", True, AgentTypeError, "got bool True"),
    ("max_iterations", 0, AgentConfigError, "max_iterations must be at least 1 or None, got 0"),
    ("max_iterations", -1, AgentConfigError, "max_iterations must be at least 1 or None, got -1"),
    ("max_execution_time", "10", AgentTypeError, "max_execution_time must be a number of seconds"),
    ("max_execution_time", -3, AgentConfigError, "max_execution_time must be a positive"),
    ("max_execution_time", math.nan, AgentConfigError, "seconds, or None for no limit; got nan"),
    ("max_execution_time", math.inf, AgentConfigError, "or None for no limit; got inf"),
    ("max_execution_time", False, AgentTypeError, "got bool False"),
    ("handle_tool_errors", "yes", AgentTypeError, "handle_tool_errors must be True or False"),
    ("handle_tool_errors", 1, AgentTypeError, "handle_tool_errors must be True or False, got int"),
    ("early_stopping_method", "maybe", AgentConfigError, "'force' or 'generate', got str 'maybe'"),
    ("early_stopping_method", None, AgentConfigError, "'force' or 'generate', got NoneType"),
    ("return_intermediate_steps", "no", AgentTypeError, "must be True or False, got str 'no'"),
]


@pytest.mark.parametrize(
    ("name", "value", "error", "message"),
    BAD_SETTINGS,
    ids=[f"{name}={value!r}" for name, value, _, _ in BAD_SETTINGS],
)
def test_a_bad_setting_is_refused_when_built(
    name: str, value: Any, error: type[Exception], message: str
) -> None:
    settings: dict[str, Any] = {name: value}
    with pytest.raises(error) as raised:
        Executor(agent(), **settings)
    assert name in str(raised.value)
    assert message in str(raised.value)
    assert isinstance(raised.value, ChainkitError)


def test_good_settings_are_kept() -> None:
    executor = Executor(
        agent(),
        max_iterations=None,
        max_execution_time=2,
        return_intermediate_steps=True,
        handle_tool_errors=True,
        early_stopping_method="generate",
    )
    assert (executor.max_iterations, executor.max_execution_time) == (None, 2)
    assert chains.call(executor, {"input": "q"})["output"] == "ok"


@pytest.mark.parametrize(
    ("argument", "pointer"),
    [
        ("verbose", "to see each step, use callbacks=callbacks.LogHandler()"),
        ("handle_parsing_errors", "error_handler=agents.ParserErrorHandler()"),
        ("tools", "the tools belong to the agent: agents.OneShotAgent(llm, tools)"),
        ("handle_tool_error", "use handle_tool_errors=True"),
        ("max_iteration", "did you mean 'max_iterations'?"),
        ("colour", "it takes agent, max_iterations"),
    ],
)
def test_an_argument_the_executor_lacks_gets_a_pointer(argument: str, pointer: str) -> None:
    given: dict[str, Any] = {argument: True}
    with pytest.raises(AgentTypeError, match=f"unexpected keyword argument '{argument}'") as got:
        Executor(agent(), **given)
    assert pointer in str(got.value)
    assert isinstance(got.value, TypeError)


# A tool subclass that does not implement call.


def test_a_tool_with_langchain_run_is_refused_when_the_agent_is_built() -> None:
    class Search(tools.Tool):
        name = "search"
        description = "searches the web"

        def _run(self, query: str) -> str:
            return query

    with pytest.raises(AgentTypeError, match="define call\\(self, input\\) instead of _run") as got:
        OneShotAgent(FakeLLM([]), [named("echo", "x"), Search()])
    assert "tool 'search' (Search) implements neither call nor acall" in str(got.value)
    with pytest.raises(AgentTypeError, match="instead of _run"):
        agents.ToolCallingAgent(FakeLLM([]), [Search()])


def test_a_tool_implementing_nothing_is_refused_naming_it() -> None:
    class Weather(tools.Tool):
        name = "weather"
        description = "current weather"

    class AsyncWeather(Weather):
        async def _arun(self, city: str) -> str:
            return city

    with pytest.raises(AgentTypeError, match="tool 'weather' \\(Weather\\)") as got:
        OneShotAgent(FakeLLM([]), [Weather()])
    assert "define call(self, input) -> str (or async acall(self, input) -> str)" in str(got.value)
    with pytest.raises(AgentTypeError, match="define acall\\(self, input\\) instead of _arun"):
        OneShotAgent(FakeLLM([]), [AsyncWeather()])


def test_a_custom_agent_with_such_a_tool_is_refused_by_the_executor() -> None:
    class Bare(tools.Tool):
        name = "bare"
        description = "does nothing"

    class Custom(OneShotAgent):
        @property
        def tools(self) -> list[tools.Tool]:
            return [*super().tools, Bare()]

    with pytest.raises(AgentTypeError, match="tool 'bare'"):
        Executor(Custom(FakeLLM([]), [named("echo", "x")]))


def test_an_async_only_tool_and_an_instance_call_are_accepted() -> None:
    class AsyncOnly(tools.Tool):
        name = "async_only"
        description = "natively async"

        async def acall(self, input: str) -> str:
            return f"async {input}"

    given = tools.Tool()
    given.name, given.description = "given", "a call set on the instance"
    given.call = lambda input: f"given {input}"  # type: ignore[method-assign]
    llm = FakeLLM(
        [
            " act\nAction: async_only\nAction Input: a",
            " act\nAction: given\nAction Input: b",
            " done\nFinal Answer: ok",
        ]
    )
    executor = Executor(OneShotAgent(llm, [AsyncOnly(), given]), return_intermediate_steps=True)
    outputs = asyncio.run(chains.acall(executor, {"input": "q"}))
    steps = [step.observation for step in outputs["intermediate_steps"]]
    assert steps == ["async a", "given b"]


# handle_tool_errors keeps the exception's type.


class Raises(tools.Tool):
    description = "raises"

    def __init__(self, name: str, error: Exception) -> None:
        self.name = name
        self.error = error

    def call(self, input: str) -> str:
        raise self.error


def tool_calls(*names: str) -> Message:
    calls = [
        ToolCall(f"call_{n}", FunctionCall(name, json.dumps({"input": "x"})))
        for n, name in enumerate(names)
    ]
    return Message.assistant("", calls)


def observations(mode: Mode, *names: str) -> list[str]:
    llm = FakeLLM([tool_calls(*names), Message.assistant("done")])
    tool_list = [
        Raises("lookup", KeyError("42")),
        Raises("divide", ZeroDivisionError("division by zero")),
        Raises("silent", ValueError()),
    ]
    executor = Executor(
        agents.ToolCallingAgent(llm, tool_list),
        handle_tool_errors=True,
        return_intermediate_steps=True,
    )
    outputs = mode.call(executor, {"input": "q"})
    return [step.observation for step in outputs["intermediate_steps"]]


def test_a_handled_tool_error_keeps_its_type_in_one_call(mode: Mode) -> None:
    assert observations(mode, "lookup") == ["Tool error: KeyError: '42'"]


def test_handled_tool_errors_keep_their_types_in_parallel_calls(mode: Mode) -> None:
    assert observations(mode, "lookup", "divide", "silent") == [
        "Tool error: KeyError: '42'",
        "Tool error: ZeroDivisionError: division by zero",
        "Tool error: ValueError",
    ]


class SteppingClock:
    """`time.monotonic` that moves one second on at each reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now


def test_a_deadline_passing_just_before_a_plan_ends_the_run_as_a_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Readings: 1 sets the deadline at 2.5, 2 lets the loop plan, 3 is past it: the model
    # would get timeout=-0.5, which it refuses.
    monkeypatch.setattr(_deadline, "time", SteppingClock())
    llm = FakeLLM([" done\nFinal Answer: ok"])
    executor = Executor(OneShotAgent(llm, [named("echo", "x")]), max_execution_time=1.5)
    with pytest.raises(NotFinishedError, match=r"max_execution_time=1\.5s while waiting") as got:
        chains.run(executor, "q")
    assert got.value.limit == "max_execution_time"
    assert llm.calls == []


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ("4", AgentTypeError, "max_parallel_tools must be a whole number, 1 or more, got str '4'"),
        (2.5, AgentTypeError, "got float 2.5"),
        (True, AgentTypeError, "got bool True"),
        (0, AgentConfigError, "max_parallel_tools must be at least 1, got 0"),
    ],
)
def test_max_parallel_tools_is_checked_by_the_agent_and_the_executor(
    value: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as got:
        agents.ToolCallingAgent(FakeLLM([]), [named("echo", "x")], max_parallel_tools=value)
    assert message in str(got.value)

    class Custom(OneShotAgent):
        max_parallel_tools = value

    with pytest.raises(error) as got:
        Executor(Custom(FakeLLM([]), [named("echo", "x")]))
    assert message in str(got.value)
