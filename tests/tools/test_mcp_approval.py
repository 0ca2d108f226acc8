"""MCP tools a person approves: `MCPTools(requires_approval=...)` marks tools by the names the
server lists, or by a function of the name and the arguments; an Executor's `approve=` then
decides each call of a marked tool, against a real MCP server."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from chainkit import agents, tools
from chainkit.llms import FakeLLM
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.modes import Mode

pytestmark = pytest.mark.timeout(60)

SERVER = [sys.executable, str(Path(__file__).resolve().parents[2] / "tests/support/mcp_server.py")]


def parallel_calls(*calls: tuple[str, dict[str, Any]]) -> FakeLLM:
    tool_calls = [
        ToolCall(f"c{i}", FunctionCall(name, json.dumps(arguments)))
        for i, (name, arguments) in enumerate(calls)
    ]
    return FakeLLM([Message.assistant("", tool_calls), "done"])


def observations(mode: Mode, mcp_tools: tools.MCPTools, approve: Any, llm: FakeLLM) -> list[str]:
    agent = agents.ToolCallingAgent(llm, list(mcp_tools))
    executor = agents.Executor(agent, approve=approve, return_intermediate_steps=True)
    outputs = mode.call(executor, {"input": "go"})
    return [step.observation for step in outputs["intermediate_steps"]]


def test_tools_named_need_approval_and_the_others_run_unasked(mode: Mode):
    asked: list[str] = []

    def approve(request: agents.ApprovalRequest) -> agents.Deny:
        asked.append(request.tool)
        return agents.Deny("not today")

    llm = parallel_calls(("add", {"a": 2, "b": 3}), ("echo", {"text": "hi"}))
    with tools.MCPTools(command=SERVER, requires_approval={"add"}) as mcp_tools:
        marks = {tool.name: tool.requires_approval for tool in mcp_tools}
        seen = observations(mode, mcp_tools, approve, llm)
    assert marks["add"] is True and marks["echo"] is False
    assert asked == ["add"]
    assert seen == ["Call denied by the user; add did not run: not today", "hi"]


def test_a_function_of_the_name_and_arguments_decides_per_call(mode: Mode):
    def large_sums(name: str, arguments: dict[str, Any]) -> bool:
        return name == "add" and arguments["a"] > 100  # the name as the server lists it

    llm = parallel_calls(("m_add", {"a": 2, "b": 3}), ("m_add", {"a": 500, "b": 1}))
    edit = agents.Edit({"a": 50, "b": 1})
    with tools.MCPTools(command=SERVER, requires_approval=large_sums, prefix="m_") as mcp_tools:
        seen = observations(mode, mcp_tools, lambda request: edit, llm)
    assert seen == ["5", "51"]


def test_a_name_the_server_does_not_list_fails_the_connect_naming_it(mode: Mode):
    mcp_tools = tools.MCPTools(command=SERVER, requires_approval={"delete_fle", "add"})

    async def connect() -> None:
        async with mcp_tools:
            pass

    with pytest.raises(tools.errors.ToolConfigError, match=r"names 'delete_fle', which MCP server"):
        if mode.is_async:
            asyncio.run(connect())
        else:
            mcp_tools.__enter__()
    assert "closed" in repr(mcp_tools)


def test_a_mark_of_another_type_is_refused():
    with pytest.raises(
        tools.errors.ToolTypeError, match="requires_approval must be True, False, a set"
    ):
        tools.MCPTools(command=SERVER, requires_approval="add")
