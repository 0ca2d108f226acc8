"""tools.Toolset: the one rule for a set of tools, found by name, and the one text a tool's
output becomes. Every place holding tools (agents, the Executor, join_tools, ToolRetriever,
`chainkit mcp-serve`) refuses what it refuses, in the same words."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from chainkit import agents, chains, tools
from chainkit._cli.entry_point import main
from chainkit.llms import FakeLLM
from chainkit.tools.toolset import observation
from tests.support.mcp_serve_factories import Reverse, Shouted, Tally

from .test_mcp import REPO_ENV, ROOT


class Named(tools.Tool):
    def __init__(self, name: str, description: str = "finds things") -> None:
        self.name = name
        self.description = description

    def call(self, input: str) -> str:
        return f"{self.name}: {input}"


class OwnAgent(agents.Agent):
    """An Agent of the user's own: the Executor checks its tools itself."""

    def __init__(self, tool_list: list[tools.Tool]) -> None:
        self._tools = tool_list

    @property
    def tools(self) -> list[tools.Tool]:
        return self._tools

    @property
    def input_keys(self) -> list[str]:
        return ["input"]

    @property
    def output_keys(self) -> list[str]:
        return ["output"]

    def plan(self, steps, inputs, **options):
        raise AssertionError("not run")

    aplan = plan_final = aplan_final = plan


HOLDERS: dict[str, Callable[[list[tools.Tool]], object]] = {
    "Toolset": tools.Toolset,
    "join_tools": lambda tool_list: tools.join_tools(*tool_list),
    "ToolRetriever": tools.ToolRetriever,
    "OneShotAgent": lambda tool_list: agents.OneShotAgent(FakeLLM([]), tool_list),
    "ToolCallingAgent": lambda tool_list: agents.ToolCallingAgent(FakeLLM([]), tool_list),
    "Executor": lambda tool_list: agents.Executor(OwnAgent(tool_list)),
}


def refusal(holder: str, tool_list: list[tools.Tool]) -> str:
    with pytest.raises(ValueError) as refused:
        HOLDERS[holder](tool_list)
    return str(refused.value)


@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_names_equal_ignoring_case_are_refused_everywhere_in_the_same_words(holder):
    search, shouted = Named("Search"), Named("search")
    message = refusal(holder, [search, shouted])
    assert message == refusal("Toolset", [search, shouted])
    assert message.startswith(
        "two tools' names differ only in case, 'Search' and 'search': the local tool "
        "Named(name='Search') and the local tool Named(name='search')."
    )
    assert refusal(holder, [Named("straße"), Named("STRASSE")]).startswith(
        "two tools' names differ only in case, 'straße' and 'STRASSE'"
    )


def test_join_tools_output_is_what_an_agent_takes():
    joined = tools.join_tools([Named("search")], Named("lookup"))
    agent = agents.ToolCallingAgent(FakeLLM([]), joined)
    assert agent.tools == joined
    with pytest.raises(ValueError, match="differ only in case"):
        tools.join_tools([Named("search")], Named("SEARCH"))


def test_mcp_serve_refuses_names_equal_ignoring_case_in_the_same_words(capsys):
    assert main(["mcp-serve", "tests.support.mcp_serve_factories:make_case_clash"]) == 2
    expected = refusal("Toolset", [Reverse(), Shouted()])
    assert expected in capsys.readouterr().err


def test_a_tool_is_found_by_its_exact_name_then_ignoring_case():
    exact, folded = Named("Search"), Named("straße")
    toolset = tools.Toolset(tool for tool in [exact, folded])  # any iterable of tools
    assert toolset.names == ["Search", "straße"] and len(toolset) == 2
    assert toolset.find("Search") is exact
    assert toolset.find("SEARCH") is exact and toolset.find("search") is exact
    assert toolset.find("STRASSE") is folded
    assert toolset.find("Searc") is None and toolset.find("") is None


def test_adding_and_removing_give_new_sets_and_leave_the_old_one_alone():
    first, second = Named("first"), Named("second")
    toolset = tools.Toolset([first])
    grown = toolset.adding([second])
    assert grown.names == ["first", "second"] and toolset.names == ["first"]
    assert grown.without([first]).names == ["second"] and grown.find("first") is first
    with pytest.raises(ValueError, match="two tools are named 'first'"):
        grown.adding([Named("first")])
    assert grown.names == ["first", "second"]


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        (Named("search"), TypeError, "tools must be a list of Tool, got Named"),
        ("search", TypeError, "tools must be a list of Tool, got str"),
        ({"search": Named("search")}, TypeError, "tools must be a list of Tool, got dict"),
        (42, TypeError, "tools must be a list of Tool, got int"),
        ([len], TypeError, r"got builtin_function_or_method.*make a function a tool"),
        ([Named("web\nsearch")], ValueError, "control character"),
        ([Named("search", " ")], ValueError, "'search' has no description"),
    ],
)
def test_what_is_no_set_of_tools_is_refused_naming_it(given, error, message):
    with pytest.raises(error, match=message):
        tools.Toolset(given)


@pytest.mark.parametrize(
    ("output", "text"),
    [
        ("plain 文本", "plain 文本"),
        ({"温度": 21, "ok": True}, '{"温度": 21, "ok": true}'),
        ([1, None], "[1, null]"),
        (object, str(object)),
    ],
)
def test_a_tools_output_becomes_text_as_json_unless_it_is_text(output, text):
    assert observation(output) == text


@pytest.mark.timeout(60)
def test_a_served_tool_returning_no_text_answers_what_an_agent_run_observes():
    executor = agents.Executor(
        agents.OneShotAgent(
            FakeLLM([" x\nAction: tally\nAction Input: a b", " Final Answer: ok"]), [Tally()]
        ),
        return_intermediate_steps=True,
    )
    observed = chains.call(executor, {"input": "q"})["intermediate_steps"][0].observation
    assert observed == '{"words": 2, "单位": "个"}'
    command = [
        sys.executable,
        "-m",
        "chainkit",
        "mcp-serve",
        "tests.support.mcp_serve_factories:make_tally",
    ]
    with tools.MCPTools(command=command, env=REPO_ENV, cwd=ROOT, timeout=20) as served:
        assert served.tools[0].call("a b") == observed
