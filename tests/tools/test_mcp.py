"""MCPTools against real MCP servers, over stdio and streamable HTTP on 127.0.0.1, with both agents,
sync and async; `chainkit mcp-serve` round trips; and the ways a server fails."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from chainkit import agents, chains, tools
from chainkit.llms import FakeLLM
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support import mcp_serve_factories as originals
from tests.support.idle_reset_proxy import idle_reset_proxy
from tests.support.mcp_server import PICTURE, SERVER_NAME
from tests.support.mcp_server_process import start_http_server, stop
from tests.support.mcp_status_server import status_server

pytestmark = pytest.mark.timeout(30)

ROOT = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, str(ROOT / "tests" / "support" / "mcp_server.py")]
LEGACY_SERVER = [sys.executable, str(ROOT / "tests" / "support" / "mcp_legacy_server.py")]
# The stdio server process gets only a few safe variables of ours; it needs the repo to import
# chainkit and the tests package.
REPO_ENV = {"PYTHONPATH": str(ROOT)}


def wait_until(predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture(scope="module")
def stdio_tools():
    with tools.MCPTools(command=SERVER, timeout=10) as mcp_tools:
        yield mcp_tools


@pytest.fixture(scope="module")
def http_url():
    process, url = start_http_server([*SERVER, "--http"])
    yield url
    stop(process)


@pytest.fixture(scope="module")
def http_tools(http_url):
    # Prefixed, so the agents and join tests also exercise prefixes end to end.
    with tools.MCPTools(url=http_url, timeout=10, prefix="web_") as mcp_tools:
        yield mcp_tools


@pytest.fixture(params=["stdio", "http"])
def served(request, stdio_tools, http_tools):
    """(MCPTools, prefix) over each transport."""
    if request.param == "stdio":
        return stdio_tools, ""
    return http_tools, "web_"


def by_name(mcp_tools, prefix=""):
    return {tool.name.removeprefix(prefix): tool for tool in mcp_tools}


# Listing and calling.


def test_tools_carry_the_servers_names_descriptions_and_schemas(served):
    mcp_tools, prefix = served
    listed = by_name(mcp_tools, prefix)
    assert {"echo", "add", "fail", "slow", "hang", "picture", "grow"} <= set(listed)
    add = listed["add"]
    assert add.name == f"{prefix}add"
    assert add.remote_name == "add"
    assert add.description == "Adds two integers."
    assert add.parameters["properties"].keys() == {"a", "b"}
    assert add.parameters["properties"]["a"]["type"] == "integer"
    assert add.parameters["required"] == ["a", "b"]
    assert add.info().parameters == add.parameters
    assert add.server == SERVER_NAME == mcp_tools.server
    assert repr(add) == f"MCPTool(name='{prefix}add', server='{SERVER_NAME}')"
    assert [tool.name for tool in mcp_tools] == [tool.name for tool in mcp_tools.tools]


def test_calls_take_json_objects_or_plain_text_for_one_string(served):
    listed = by_name(*served)
    text = 'héllo 世界 "quoted"\nsecond line'
    assert listed["echo"].call(text) == text
    assert listed["echo"].call(json.dumps({"text": "x"})) == "x"
    assert listed["echo"].call("42") == "42"  # text that parses as JSON stays text
    assert listed["echo"].call('"quoted"') == "quoted"  # a JSON string is the string
    assert listed["add"].call('{"a": 2, "b": 40}') == "42"
    big = "长" * 300_000
    assert listed["echo"].call(big) == big


def test_tool_errors_and_protocol_errors_become_tool_errors(served):
    listed = by_name(*served)
    with pytest.raises(tools.ToolError, match="refused: disk full") as failed:
        listed["fail"].call("disk full")
    assert isinstance(failed.value, tools.MCPToolError)
    assert (failed.value.server, failed.value.tool) == (SERVER_NAME, listed["fail"].name)
    with pytest.raises(tools.MCPToolError, match=r"refused the call to .*lookup: no record k1"):
        listed["lookup"].call("k1")
    with pytest.raises(tools.MCPToolError, match="integer"):
        listed["add"].call('{"a": "x", "b": 1}')  # the server checks the types


def test_arguments_that_cannot_fit_are_refused_before_the_server_is_asked(served):
    listed = by_name(*served)
    add = listed["add"]
    expected = (
        r"expected a JSON object with the fields a \(integer, required\), b \(integer, required\)"
    )
    with pytest.raises(
        tools.MCPToolError, match=rf"Invalid arguments for tool .*add: .*{expected}"
    ):
        add.call("one and two")
    with pytest.raises(tools.MCPToolError, match="missing required field b"):
        add.call('{"a": 1}')
    with pytest.raises(tools.MCPToolError, match="missing required field text"):
        listed["echo"].call("{}")
    with pytest.raises(tools.MCPToolError, match="not valid JSON"):
        add.input_from_arguments('{"a": 1, "b": ')
    with pytest.raises(tools.MCPToolError, match=r"got '\[1, 2\]'"):
        add.input_from_arguments("[1, 2]")
    double_encoded = json.dumps(json.dumps({"a": 1, "b": 2}))
    assert add.call(add.input_from_arguments(double_encoded)) == "3"


def test_content_that_is_not_text_is_described_not_dropped(served):
    listed = by_name(*served)
    assert listed["picture"].call("") == f"a picture\n[image/png, {len(PICTURE)} bytes]"
    assert listed["pid"].call("ignored text") == listed["pid"].call("")  # takes no arguments


@pytest.mark.timeout(60)
def test_calls_from_many_threads_run_at_once(served, request):
    # Each call waits at the server until all six are there: one at a time, none would be.
    meet = by_name(*served)["meet"]
    arguments = json.dumps({"name": request.node.name, "parties": 6})
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(meet.call, [arguments] * 6))
    assert results == ["met"] * 6


# Both agents, sync and async.


def oneshot_script(prefix):
    return [
        f"I should echo it.\nAction: {prefix}echo\nAction Input: 你好, MCP",
        f"Now the failing one.\nAction: {prefix}fail\nAction Input: no luck",
        "I now know the final answer.\nFinal Answer: done",
    ]


def tool_calling_script(prefix):
    calls = [
        ToolCall("c1", FunctionCall(f"{prefix}echo", json.dumps({"text": "你好, MCP"}))),
        ToolCall("c2", FunctionCall(f"{prefix}add", json.dumps({"a": 2, "b": 3}))),
        ToolCall("c3", FunctionCall(f"{prefix}fail", json.dumps({"reason": "no luck"}))),
    ]
    return [Message.assistant("", calls), "done"]


@pytest.mark.parametrize("agent_kind", ["oneshot", "tool_calling"])
def test_both_agents_run_mcp_tools_sync_and_async(served, agent_kind, mode):
    mcp_tools, prefix = served
    agent: agents.OneShotAgent | agents.ToolCallingAgent
    if agent_kind == "oneshot":
        llm = FakeLLM(oneshot_script(prefix))
        agent = agents.OneShotAgent(llm, list(mcp_tools))
        expected = ["你好, MCP", "refused: no luck"]
    else:
        llm = FakeLLM(tool_calling_script(prefix))
        agent = agents.ToolCallingAgent(llm, list(mcp_tools))
        expected = ["你好, MCP", "5", "refused: no luck"]
    executor = agents.Executor(agent, return_intermediate_steps=True)
    outputs = mode.call(executor, {"input": "use the tools"})
    assert outputs["output"] == "done"
    observations = [step.observation for step in outputs["intermediate_steps"]]
    assert observations[:-1] == expected[:-1]
    assert "refused: no luck" in observations[-1]
    if agent_kind == "tool_calling":
        sent = {info.name: info.parameters for info in llm.calls[0].options["tools"]}
        assert sent[f"{prefix}add"] == by_name(mcp_tools, prefix)["add"].parameters


def test_the_cards_example_shape_works_with_mcp_tools():
    llm = FakeLLM(
        [
            'I should add.\nAction: add\nAction Input: {"a": 20, "b": 22}',
            "I now know the final answer.\nFinal Answer: 42",
        ]
    )
    with tools.MCPTools(command=SERVER) as mcp_tools:
        answer = chains.run(agents.Executor(agents.OneShotAgent(llm, list(mcp_tools))), "20+22?")
    assert answer == "42"
    assert "Observation: 42" in llm.calls[1].messages[-1].content


def test_callbacks_see_the_tool_run_and_the_server_of_a_failure(stdio_tools, events):
    llm = FakeLLM(oneshot_script(""))
    executor = agents.Executor(agents.OneShotAgent(llm, list(stdio_tools)))
    chains.run(executor, "go", callbacks=events)
    heard = events.described(
        {
            "tool_start": lambda tool, input, call_id: ("start", tool, input),
            "tool_end": lambda tool, output, call_id: ("end", tool, output),
            "tool_error": lambda tool, error, call_id: (
                "error",
                tool,
                getattr(error, "server", None),
            ),
        }
    )
    assert heard == [
        ("start", "echo", "你好, MCP"),
        ("end", "echo", "你好, MCP"),
        ("start", "fail", "no luck"),
        ("error", "fail", SERVER_NAME),
    ]


def test_async_calls_do_not_block_the_callers_event_loop(stdio_tools):
    slow = by_name(stdio_tools)["slow"]

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticking = asyncio.create_task(ticker())
        results = await asyncio.gather(slow.acall("0.4"), slow.acall("0.4"))
        ticking.cancel()
        return results, ticks

    results, ticks = asyncio.run(main())
    assert results == ["slept 0.4", "slept 0.4"]
    assert ticks >= 10  # the loop ran on while the calls waited


def test_cancelling_an_async_call_cancels_it_and_leaves_the_session_working(stdio_tools):
    listed = by_name(stdio_tools)

    async def main():
        call = asyncio.create_task(listed["hang"].acall(""))
        await asyncio.sleep(0.2)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        return await listed["echo"].acall("still here")

    assert asyncio.run(main()) == "still here"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_async_with_connects_without_blocking_the_loop(transport, http_url):
    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticking = asyncio.create_task(ticker())
        target = {"command": SERVER} if transport == "stdio" else {"url": http_url}
        async with tools.MCPTools(**target) as mcp_tools:
            echo = by_name(mcp_tools)["echo"]
            answer = await echo.acall("async hello")
            connected_ticks = ticks
        ticking.cancel()
        return answer, connected_ticks, echo

    answer, connected_ticks, echo = asyncio.run(main())
    assert answer == "async hello"
    assert connected_ticks >= 5
    with pytest.raises(tools.MCPToolError, match="has ended"):
        echo.call("after the block")


def test_sync_use_from_a_thread_of_its_own():
    outcome = []

    def work():
        with tools.MCPTools(command=LEGACY_SERVER) as mcp_tools:
            outcome.append(by_name(mcp_tools)["echo"].call("from a thread"))

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(20)
    assert outcome == ["from a thread"]


# Tool list changes.


def test_a_list_change_the_server_announces_refreshes_the_tools(served):
    mcp_tools, prefix = served
    new_name = f"added_for_{prefix or 'stdio'}"
    assert by_name(mcp_tools, prefix)["grow"].call(new_name) == f"added {new_name}"
    assert wait_until(lambda: f"{prefix}{new_name}" in [t.name for t in mcp_tools], 10)
    assert by_name(mcp_tools, prefix)[new_name].call("") == f"{new_name} works"


def test_a_handshake_only_server_with_paged_tools_and_unasked_list_changes():
    with tools.MCPTools(command=LEGACY_SERVER) as mcp_tools:
        listed = ["echo", "broken", "chatty", "summary", "announce"]
        assert [tool.name for tool in mcp_tools] == listed  # from 2 pages
        assert mcp_tools.server == "legacy"
        assert by_name(mcp_tools)["echo"].call("old protocol") == "old protocol"
        # The schema's examples that hold the required fields; no other tool lists any.
        assert by_name(mcp_tools)["echo"].examples == (tools.ToolExample({"text": "hello"}),)
        assert by_name(mcp_tools)["chatty"].examples == ()
        by_name(mcp_tools)["announce"].call("")
        assert wait_until(lambda: "late" in [t.name for t in mcp_tools], 10)
        assert by_name(mcp_tools)["late"].call("") == "late works"
        assert [t.name for t in mcp_tools.refresh()] == [*listed, "late"]


# Several servers.


def test_join_tools_refuses_a_name_two_servers_share_naming_both(stdio_tools, http_url):
    with (
        tools.MCPTools(url=http_url, name="web-copy") as other,
        pytest.raises(ValueError, match=r"'echo'.*'chainkit-test'.*'web-copy'.*prefix="),
    ):
        tools.join_tools(stdio_tools, other)
    local_echo = tools.StructuredTool(lambda text: text, name="echo", description="local echo")
    with pytest.raises(ValueError, match=r"'echo'.*MCP server 'chainkit-test'.*local tool"):
        tools.join_tools(stdio_tools, [local_echo])


def test_prefixed_servers_join_and_each_tool_reaches_its_own_server(stdio_tools, http_tools):
    joined = tools.join_tools(stdio_tools, http_tools, tools.Calculator())
    names = [tool.name for tool in joined]
    assert len(names) == len(set(names))
    assert {"echo", "web_echo", "calculator"} <= set(names)
    llm = FakeLLM(
        [
            Message.assistant(
                "",
                [
                    ToolCall("1", FunctionCall("echo", '{"text": "local"}')),
                    ToolCall("2", FunctionCall("web_echo", '{"text": "remote"}')),
                ],
            ),
            "done",
        ]
    )
    executor = agents.Executor(agents.ToolCallingAgent(llm, joined), return_intermediate_steps=True)
    steps = chains.call(executor, {"input": "both"})["intermediate_steps"]
    assert [step.observation for step in steps] == ["local", "remote"]


# Faults: each ends in a clear error within its timeout.


@pytest.mark.timeout(60)
def test_a_tool_that_never_answers_times_out_sync_and_async():
    with tools.MCPTools(command=SERVER, timeout=1, connect_timeout=20) as mcp_tools:
        listed = by_name(mcp_tools)
        expected = "did not answer the call to hang within 1 s"
        started = time.monotonic()
        with pytest.raises(tools.MCPToolError, match=expected):
            listed["hang"].call("")
        with pytest.raises(tools.MCPToolError, match=expected):
            asyncio.run(listed["hang"].acall(""))
        assert time.monotonic() - started < 30  # two 1 s timeouts, not a hang
        assert listed["echo"].call("after the timeouts") == "after the timeouts"


@pytest.mark.timeout(120)
def test_a_server_killed_mid_session_ends_calls_with_a_clear_error(mode):
    mcp_tools = tools.MCPTools(command=SERVER, timeout=100)
    with mcp_tools:
        listed = by_name(mcp_tools)
        server_pid = int(listed["pid"].call(""))
        threading.Timer(0.3, os.kill, (server_pid, signal.SIGKILL)).start()
        started = time.monotonic()
        with pytest.raises(
            tools.MCPToolError,
            match=r"'chainkit-test' closed the connection \(the server exited\); hang got no",
        ):
            if not mode.is_async:
                listed["hang"].call("")
            else:
                asyncio.run(listed["hang"].acall(""))
        with pytest.raises(tools.MCPToolError, match=r"'chainkit-test' .*the server exited"):
            listed["echo"].call("anyone there?")
        assert time.monotonic() - started < 50  # not the 100 s timeout
        assert wait_until(lambda: "ended: the server exited" in repr(mcp_tools), 20)
        with pytest.raises(
            tools.MCPToolError,
            match=r"'chainkit-test' has ended \(the server exited\); echo was not called",
        ):
            listed["echo"].call("and now?")
    assert "closed" in repr(mcp_tools)


@pytest.mark.timeout(120)
def test_an_http_server_killed_mid_session_ends_calls_with_a_clear_error():
    process, url = start_http_server([*SERVER, "--http"])
    gone = r"the server cannot be reached, ConnectError: "
    try:
        with tools.MCPTools(url=url, timeout=100) as mcp_tools:
            echo = by_name(mcp_tools)["echo"]
            assert echo.call("alive") == "alive"
            process.kill()
            process.wait(5)
            started = time.monotonic()
            # The session ends once the transport fails: this call and later ones say so.
            for attempt in range(3):
                with pytest.raises(tools.MCPToolError, match=rf"'chainkit-test'.*{gone}"):
                    if attempt == 1:
                        asyncio.run(echo.acall("still there?"))
                    else:
                        echo.call("still there?")
            assert time.monotonic() - started < 50  # not the 100 s timeout
            assert wait_until(lambda: f"ended: {gone}" in repr(mcp_tools), 20)
            with pytest.raises(tools.MCPToolError, match=rf"has ended \({gone}"):
                echo.call("and now?")
    finally:
        stop(process)


def test_a_connection_the_server_may_be_closing_for_idleness_is_not_reused(http_url):
    # Servers close idle connections after a few seconds (uvicorn and node: 5 s, the HTTP
    # client's own default too): a request sent on one as it closes is reset, and the SDK ends
    # the whole session. The proxy resets every request on a connection idle for 3 s.
    port = int(http_url.rsplit(":", 1)[1].split("/")[0])
    with idle_reset_proxy(port, idle_seconds=3.0) as proxy:
        url = http_url.replace(f":{port}/", f":{proxy.port}/")
        with tools.MCPTools(url=url, timeout=10) as mcp_tools:
            echo = by_name(mcp_tools)["echo"]
            assert echo.call("before the pause") == "before the pause"
            time.sleep(3.5)
            assert echo.call("after the pause") == "after the pause"
        assert proxy.resets == 0


def test_a_server_that_exits_at_start_is_a_clear_connection_error(mode):
    command = [
        sys.executable,
        "-c",
        "import sys; print('no config file', file=sys.stderr); sys.exit(3)",
    ]
    mcp_tools = tools.MCPTools(command=command, connect_timeout=100)
    started = time.monotonic()
    with pytest.raises(
        tools.MCPConnectionError, match=r"(?s)closed the connection while starting.*no config file"
    ):
        if not mode.is_async:
            mcp_tools.__enter__()
        else:
            asyncio.run(mcp_tools.__aenter__())
    assert time.monotonic() - started < 50  # not the 100 s connect timeout
    with pytest.raises(RuntimeError, match="not open"):
        list(mcp_tools)


def test_a_server_that_never_initialises_times_out_naming_its_stray_output():
    command = [
        sys.executable,
        "-c",
        "print('Server ready!', flush=True); import time; time.sleep(60)",
    ]
    started = time.monotonic()
    with (
        pytest.raises(
            tools.MCPConnectionError, match=r"(?s)did not finish starting within 1 s.*Server ready!"
        ),
        tools.MCPTools(command=command, connect_timeout=1),
    ):
        pass
    assert time.monotonic() - started < 20  # the 1 s timeout, not the server's 60 s sleep


def test_a_missing_program_or_a_closed_port_is_a_clear_connection_error():
    with (
        pytest.raises(tools.MCPConnectionError, match="could not start MCP server /no/such/server"),
        tools.MCPTools(command=["/no/such/server", "--flag"]),
    ):
        pass
    with (
        pytest.raises(
            tools.MCPConnectionError,
            match=r"could not connect to MCP server http://127.0.0.1:9/mcp",
        ),
        tools.MCPTools(
            url="http://user:secret@127.0.0.1:9/mcp?key=sk-abcdefghijklmnop", connect_timeout=5
        ),
    ):
        pass


def test_a_malformed_result_is_a_tool_error_and_the_session_goes_on():
    with tools.MCPTools(command=LEGACY_SERVER) as mcp_tools:
        listed = by_name(mcp_tools)
        with pytest.raises(tools.MCPToolError, match=r"malformed result \(content: .*valid list"):
            listed["broken"].call("")
        assert listed["echo"].call("fine") == "fine"


def test_a_tool_list_that_pages_forever_fails_the_connect():
    with (
        pytest.raises(tools.MCPConnectionError, match="lists its tools in more than 100 pages"),
        tools.MCPTools(command=LEGACY_SERVER, env={"PAGES_FOREVER": "1"}),
    ):
        pass


def test_a_refresh_the_server_never_answers_times_out():
    with tools.MCPTools(command=LEGACY_SERVER, env={"LIST_ONCE": "1"}, timeout=1) as mcp_tools:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="'legacy' did not list its tools in 1 s"):
            mcp_tools.refresh()
        with pytest.raises(TimeoutError, match="'legacy' did not list its tools in 1 s"):
            asyncio.run(mcp_tools.arefresh())
        assert time.monotonic() - started < 20  # two 1 s timeouts, not a hang
        kept = ["echo", "broken", "chatty", "summary", "announce"]
        assert [tool.name for tool in mcp_tools] == kept
        assert by_name(mcp_tools)["echo"].call("still answering") == "still answering"


def test_a_server_flooding_stderr_is_not_blocked_by_it():
    # 2 MB is far past a pipe's buffer: a server whose stderr nobody read would stall.
    with tools.MCPTools(command=LEGACY_SERVER, env={"STDERR_FLOOD": "2000000"}) as mcp_tools:
        assert by_name(mcp_tools)["echo"].call("heard") == "heard"


def test_closing_during_a_call_ends_the_call_and_the_close():
    outcome = []

    def call(tool):
        try:
            tool.call("")
        except tools.ToolError as error:
            outcome.append(str(error))

    mcp_tools = tools.MCPTools(command=SERVER, timeout=100)
    with mcp_tools:
        caller = threading.Thread(target=call, args=(by_name(mcp_tools)["hang"],))
        caller.start()
        time.sleep(0.3)
    caller.join(20)
    # The close ended the call, not its 100 s timeout: the message says so.
    assert outcome == [
        "the session with MCP server 'chainkit-test' was closed during the call to hang"
    ]


def test_keys_in_a_failing_servers_stderr_are_masked():
    key = "sk-" + "a1b2c3d4e5f6g7h8i9"
    command = [sys.executable, "-c", f"import sys; sys.exit('bad key {key}')"]
    with pytest.raises(tools.MCPConnectionError) as failed, tools.MCPTools(command=command):
        pass
    assert "bad key sk-a***" in str(failed.value)
    assert key not in str(failed.value)


def test_env_and_cwd_reach_the_server_process(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(
        (ROOT / "tests" / "support" / "mcp_legacy_server.py")
        .read_text()
        .replace('"name": "legacy"', '"name": __import__("os").environ["SERVER_LABEL"]')
    )
    with tools.MCPTools(
        command=[sys.executable, "server.py"], cwd=tmp_path, env={"SERVER_LABEL": "from env"}
    ) as mcp_tools:
        assert mcp_tools.server == "from env"


# Lifecycle and arguments.


def test_tools_need_an_open_session_and_an_mcptools_opens_once():
    mcp_tools = tools.MCPTools(command=LEGACY_SERVER, name="legacy-named")
    with pytest.raises(RuntimeError, match=r"not open.*with MCPTools"):
        list(mcp_tools)
    unopened = tools.MCPTool(
        mcp_tools,
        server="legacy-named",
        remote_name="echo",
        name="echo",
        description="",
        parameters={},
    )
    with pytest.raises(tools.MCPToolError, match=r"echo cannot be called: .* was never opened"):
        unopened.call("hi")
    with mcp_tools:
        assert mcp_tools.server == "legacy-named"
        echo = mcp_tools.tools[0]
        assert isinstance(echo, tools.MCPTool)
        assert echo.server == "legacy-named"
    with pytest.raises(
        tools.MCPToolError, match="session with MCP server 'legacy-named' has ended"
    ):
        echo.call("late")
    with pytest.raises(RuntimeError, match="opened before"):
        mcp_tools.__enter__()
    mcp_tools.close()  # closing twice is harmless


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({}, TypeError, "exactly one of command"),
        ({"command": ["x"], "url": "http://h/mcp"}, TypeError, "exactly one of command"),
        ({"command": "python server.py"}, TypeError, "a list such as"),
        ({"command": []}, ValueError, "command is empty"),
        ({"command": ["python", 3]}, TypeError, "list of strings"),
        ({"command": ["py", "a\0b"]}, ValueError, "NUL"),
        ({"url": "127.0.0.1:8000/mcp"}, ValueError, "http:// or https://"),
        ({"url": "ftp://host/mcp"}, ValueError, "http:// or https://"),
        ({"url": b"http://h/mcp"}, TypeError, "url must be a string"),
        ({"command": ["x"], "headers": {"a": "b"}}, TypeError, "headers= is for url="),
        ({"url": "http://h/mcp", "env": {"A": "b"}}, TypeError, "env= and cwd= are for command="),
        ({"command": ["x"], "env": {"A": 1}}, TypeError, "'A' does not"),
        ({"url": "http://h/mcp", "headers": ["Authorization"]}, TypeError, "headers must map"),
        ({"command": ["x"], "timeout": 0}, ValueError, "positive, finite"),
        ({"command": ["x"], "timeout": float("nan")}, ValueError, "positive, finite"),
        ({"command": ["x"], "connect_timeout": float("inf")}, ValueError, "positive, finite"),
        ({"command": ["x"], "timeout": True}, TypeError, "number of seconds"),
        ({"command": ["x"], "prefix": None}, TypeError, "prefix must be a string"),
        ({"command": ["x"], "name": " "}, ValueError, "non-empty string"),
    ],
)
def test_bad_arguments_fail_at_once_naming_what_is_expected(arguments, error, message):
    with pytest.raises(error, match=message):
        tools.MCPTools(**arguments)


def test_reprs_and_errors_never_show_headers_env_or_url_credentials():
    mcp_tools = tools.MCPTools(
        url="https://user:pw@example.com/mcp?token=t0ken",
        headers={"Authorization": "Bearer s3cret"},
    )
    assert repr(mcp_tools) == "MCPTools('https://example.com/mcp', new)"
    local = tools.MCPTools(command=["server"], env={"API_KEY": "hidden-value"})
    assert "hidden-value" not in repr(local)
    with pytest.raises(TypeError) as failed:
        tools.MCPTools(command=["x"], env={"API_KEY": 12345})  # type: ignore[dict-item]
    assert "12345" not in str(failed.value)


# chainkit tools served with `chainkit mcp-serve`, and loaded back.


@pytest.fixture(scope="module", params=["stdio", "http"])
def round_trip(request):
    factory = "tests.support.mcp_serve_factories:make_tools"
    if request.param == "stdio":
        command = [sys.executable, "-m", "chainkit", "mcp-serve", factory]
        with tools.MCPTools(command=command, env=REPO_ENV, cwd=ROOT, timeout=10) as mcp_tools:
            yield mcp_tools
        return
    env = {**os.environ, **REPO_ENV}
    process, url = start_http_server(
        [sys.executable, "-m", "chainkit", "mcp-serve", factory, "--http", "0"], env=env
    )
    try:
        with tools.MCPTools(url=url, timeout=10) as mcp_tools:
            yield mcp_tools
    finally:
        stop(process)


def outcome(tool, text, native=False):
    try:
        return "ok", tool.call(tool.input_from_arguments(text) if native else text)
    except tools.ToolError as error:
        return "error", str(error)


ROUND_TRIP_CALLS = [
    ("get_weather", '{"city": "北京"}'),
    ("get_weather", '{"city": "Paris", "unit": "fahrenheit"}'),
    ("get_weather", '{"city": "Paris", "unit": "kelvin"}'),
    ("add", '{"a": 2, "b": 40}'),
    ("add", '{"a": "x", "b": 1}'),
    ("shout", "hello MCP"),
    ("shout", '{"text": "json in"}'),
    ("refuse", "not today"),
    ("reverse", "stressed"),
    ("calculator", "6 * 7"),
    ("calculator", "1 / 0"),
]


def test_served_chainkit_tools_keep_names_descriptions_and_schemas(round_trip):
    served = by_name(round_trip)
    for original in originals.make_tools():
        copy = served[original.name]
        assert copy.description == original.description
        assert copy.parameters == original.parameters
    assert round_trip.server == "tests.support.mcp_serve_factories:make_tools"


@pytest.mark.parametrize(("name", "text"), ROUND_TRIP_CALLS)
def test_served_chainkit_tools_answer_like_the_originals(round_trip, name, text):
    original = {tool.name: tool for tool in originals.make_tools()}[name]
    copy = by_name(round_trip)[name]
    assert outcome(copy, text) == outcome(original, text)
    if text.startswith("{"):
        assert outcome(copy, text, native=True) == outcome(original, text, native=True)


def test_a_served_tool_that_crashes_reports_the_exception(round_trip):
    with pytest.raises(tools.MCPToolError, match="crash failed: KeyError: 'missing'"):
        by_name(round_trip)["crash"].call("")


def test_mcp_serve_serves_an_agents_tools():
    command = [
        sys.executable,
        "-m",
        "chainkit",
        "mcp-serve",
        "tests.support.mcp_serve_factories:make_agent",
    ]
    with tools.MCPTools(command=command, env=REPO_ENV, cwd=ROOT) as mcp_tools:
        assert [tool.name for tool in mcp_tools] == ["reverse", "add"]
        assert by_name(mcp_tools)["reverse"].call("ab") == "ba"


def test_mcp_serve_keeps_what_the_factory_prints_off_the_protocols_stdout():
    command = [sys.executable, "-m", "chainkit", "mcp-serve"]
    served = subprocess.run(
        [*command, "tests.support.mcp_serve_factories:make_noisy"],
        input="",  # the client hangs up at once: the server exits
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **REPO_ENV},
        timeout=20,
    )
    assert served.returncode == 0, served.stderr
    assert served.stdout == ""
    assert "building the tools" in served.stderr


@pytest.mark.timeout(60)
def test_mcp_serve_over_http_serves_with_stderr_broken():
    # Its address is said on stderr; a stderr whose reader went away loses the line, not
    # the server. The port is picked here, as the line cannot be read.
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    read_end, broken = os.pipe()
    os.close(read_end)
    command = [sys.executable, "-m", "chainkit", "mcp-serve", "chainkit.tools:builtin_tools"]
    process = subprocess.Popen(
        [*command, "--http", str(port)],
        stdin=subprocess.DEVNULL,
        stderr=broken,
        env={**os.environ, **REPO_ENV},
        text=True,
    )
    os.close(broken)
    try:
        served = served_names(process, f"http://127.0.0.1:{port}/mcp")
    finally:
        stop(process)
    assert served == ["calculator", "random_number", "current_time"]


def served_names(process: subprocess.Popen[str], url: str) -> list[str]:
    """The tools the server at `url` offers, once it accepts connections."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the server exited with {process.returncode}"
        try:
            with tools.MCPTools(url=url, timeout=10) as mcp_tools:
                return [tool.name for tool in mcp_tools]
        except tools.MCPConnectionError:
            time.sleep(0.1)
    raise AssertionError(f"the server did not answer at {url}")


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        ("tests.support.mcp_serve_factories", "expected module:factory"),
        ("tests.no_such_module:make", "cannot import tests.no_such_module"),
        ("tests.support.mcp_serve_factories:nothing", "has no attribute 'nothing'"),
        ("tests.support.mcp_serve_factories:make_number", "gave int; expected a list of Tools"),
        ("tests.support.mcp_serve_factories:make_duplicates", "two tools are named 'reverse'"),
    ],
)
def test_mcp_serve_refuses_a_factory_that_gives_no_tools(factory, message, capsys):
    from chainkit._cli.entry_point import main

    assert main(["mcp-serve", factory]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("port", ["http", "-1", "65536"])
def test_mcp_serve_refuses_a_bad_port(port, capsys):
    from chainkit._cli.entry_point import main

    with pytest.raises(SystemExit) as exited:
        main(["mcp-serve", "chainkit.tools:builtin_tools", "--http", port])
    assert exited.value.code == 2
    assert "--http" in capsys.readouterr().err


# The parts, without a server.


class RecordingCaller:
    """Stands in for an MCPTools session: records the arguments each call would send."""

    def __init__(self):
        self.sent = []

    def _call_tool(self, tool, arguments):
        self.sent.append(arguments)
        return "ok"

    async def _acall_tool(self, tool, arguments):
        return self._call_tool(tool, arguments)


def make_tool(properties, required=()):
    """A tool with this schema, and the caller that records what it sends."""
    schema = {"type": "object", "properties": properties, "required": list(required)}
    caller = RecordingCaller()
    tool = tools.MCPTool(
        caller,
        server="unit",
        remote_name="t",
        name="t",
        description="a tool",
        parameters=schema,
    )
    return tool, caller


@pytest.mark.parametrize(
    ("properties", "text", "sent"),
    [
        ({"n": {"type": "integer"}}, "5", {"n": 5}),
        ({"n": {"type": "integer"}}, '{"n": 6}', {"n": 6}),
        (
            {"q": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "plain words",
            {"q": "plain words"},
        ),
        ({"q": {"type": ["string", "null"]}}, "[1, 2]", {"q": "[1, 2]"}),
        ({"items": {"type": "array"}}, "[1, 2]", {"items": [1, 2]}),
        ({}, "whatever the model wrote", {}),
        ({"a": {"type": "string"}, "b": {"type": "string"}}, '{"a": "x"}', {"a": "x"}),
        ({"q": {"type": "string"}}, "   ", {}),  # an optional string: its default applies
        ({"q": {"type": "string"}}, "", {}),
        ({"n": {"type": "integer"}}, "", {}),
    ],
)
def test_action_input_text_becomes_the_arguments_object(properties, text, sent):
    tool, caller = make_tool(properties)
    assert tool.call(text) == "ok"
    assert asyncio.run(tool.acall(text)) == "ok"
    assert caller.sent == [sent, sent]


def test_a_blank_action_input_is_the_string_a_tool_requires():
    tool, caller = make_tool({"q": {"type": "string"}}, ["q"])
    assert tool.call("") == asyncio.run(tool.acall("   ")) == "ok"
    assert caller.sent == [{"q": ""}, {"q": "   "}]


def test_text_that_fits_no_argument_is_refused_naming_the_fields():
    tool, caller = make_tool({"a": {"type": "string"}, "b": {"type": ["integer", "null"]}}, ["a"])
    with pytest.raises(
        tools.MCPToolError,
        match=r"expected a JSON object with the fields a \(string, required\), b \(integer\)",
    ):
        tool.call("free text")
    with pytest.raises(tools.MCPToolError, match="missing required field a"):
        tool.call('{"b": 1}')
    assert caller.sent == []


def test_a_schema_with_odd_parts_still_makes_a_tool():
    caller = RecordingCaller()
    tool = tools.MCPTool(
        caller,
        server="unit",
        remote_name="odd",
        name="odd",
        description="odd",
        parameters={"type": "object", "properties": "oops", "required": "text"},
    )
    assert tool.call("anything") == "ok"
    assert caller.sent == [{}]


def test_every_content_kind_has_an_observation():
    from mcp import types

    blob = "QUJD"  # 3 bytes
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="first"),
            types.AudioContent(type="audio", data="AAAA\nAAA=", mime_type="audio/wav"),
            types.ResourceLink(
                type="resource_link",
                name="report",
                uri="file:///r.pdf",
                mime_type="application/pdf",
                size=2048,
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///a.txt", text="inside"),
            ),
            types.EmbeddedResource(
                type="resource", resource=types.BlobResourceContents(uri="file:///b.bin", blob=blob)
            ),
        ]
    )
    from chainkit.tools._mcp.content import result_text

    assert result_text(result).split("\n") == [
        "first",
        "[audio/wav, 5 bytes]",
        "[resource report: file:///r.pdf, application/pdf, 2,048 bytes]",
        "[resource file:///a.txt]",
        "inside",
        "[resource file:///b.bin: binary, 3 bytes]",
    ]
    structured = types.CallToolResult(content=[], structured_content={"温度": 21})
    assert result_text(structured) == '{"温度": 21}'


def test_join_tools_takes_tools_and_lists_and_refuses_anything_else():
    calculator, clock = tools.Calculator(), tools.CurrentTime()
    assert tools.join_tools(calculator, [clock], ()) == [calculator, clock]
    with pytest.raises(TypeError, match="tools must be Tool instances, got str"):
        tools.join_tools(["calculator"])  # type: ignore[list-item]
    with pytest.raises(
        ValueError, match=r"'calculator': the local tool Calculator.*the local tool"
    ):
        tools.join_tools(calculator, tools.Calculator())


def test_builtin_tools_are_new_instances_each_time():
    first, second = tools.builtin_tools(), tools.builtin_tools()
    assert [tool.name for tool in first] == ["calculator", "random_number", "current_time"]
    assert all(a is not b for a, b in zip(first, second, strict=True))


# What the server answers, and how it is reported.

RPC_CODES = [-32000, -32001, -32099, -32600, -32601, -32602, -32603, -32700, 0, 7, -1]


@pytest.mark.parametrize("code", RPC_CODES)
def test_a_json_rpc_error_of_any_code_keeps_the_servers_words_and_the_session(served, code):
    listed = by_name(*served)
    arguments = json.dumps({"code": code, "message": f"boom 爆 {code}"})
    with pytest.raises(tools.MCPToolError) as failed:
        listed["rpc_error"].call(arguments)
    message = str(failed.value)
    assert f"'{SERVER_NAME}' refused the call to {listed['rpc_error'].name}" in message
    assert message.endswith(f"boom 爆 {code} (error {code})")
    assert "closed the connection" not in message
    assert listed["echo"].call("next") == "next"


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (401, "HTTP 401 Unauthorized: check the headers= given to MCPTools, e.g. Authorization"),
        (403, "HTTP 403 Forbidden: check the headers= given to MCPTools, e.g. Authorization"),
        (404, "HTTP 404 Not Found: check the URL and its path, often /mcp"),
        (500, "HTTP 500 Internal Server Error"),
        (502, "HTTP 502 Bad Gateway"),
    ],
)
def test_an_http_error_status_is_reported_with_what_to_check(status, hint):
    with status_server() as server:
        server.refuse_with = status
        with (
            pytest.raises(tools.MCPConnectionError, match=re.escape(f"answered {hint}")),
            tools.MCPTools(url=server.url, connect_timeout=20),
        ):
            pass
        server.refuse_with = None
        with tools.MCPTools(url=server.url, timeout=20) as mcp_tools:
            echo = by_name(mcp_tools)["echo"]
            server.refuse_with = status  # e.g. a token that expired mid-session
            with pytest.raises(
                tools.MCPToolError, match=re.escape(f"the call to echo with {hint}")
            ):
                echo.call("hello")
            server.refuse_with = None
            assert echo.call("hello again") == "hello again"


def test_a_wrong_path_is_reported_as_404_with_what_to_check():
    with status_server() as server:
        wrong = server.url.removesuffix("/mcp") + "/sse"
        with (
            pytest.raises(tools.MCPConnectionError, match=r"HTTP 404 Not Found: check the URL"),
            tools.MCPTools(url=wrong, connect_timeout=20),
        ):
            pass


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer s3cret-é"},
        {"Authorization": "Bearer s3cret\r\nX-Injected: 1"},
        {"X-Key": "s3cret\n"},
        {"X-Key": "s3cret\x00"},
    ],
)
def test_a_header_value_http_cannot_send_is_refused_naming_the_header_only(headers):
    name = next(iter(headers))
    with pytest.raises(
        tools.errors.ToolConfigError, match=f"the value of the header '{name}'"
    ) as bad:
        tools.MCPTools(url="http://127.0.0.1:9/mcp", headers=headers)
    assert "s3cret" not in str(bad.value)
    assert isinstance(bad.value, ValueError)


@pytest.mark.parametrize("name", ["X Key", "X:Key", "", "Ключ", "X-Key\r\n"])
def test_a_header_name_http_cannot_send_is_refused(name):
    with pytest.raises(tools.errors.ToolConfigError, match=r"the header name .* cannot be sent"):
        tools.MCPTools(url="http://127.0.0.1:9/mcp", headers={name: "v"})


def test_a_tool_that_runs_only_as_a_task_is_not_offered():
    with tools.MCPTools(command=LEGACY_SERVER) as mcp_tools:
        names = [tool.name for tool in mcp_tools]
        assert "report" not in names  # taskSupport "required": a plain call is refused
        assert by_name(mcp_tools)["summary"].call("") == "summed up"  # "optional"


STRAY_SCRIPT = """
import sys
from chainkit import tools

server = [sys.executable, {server!r}]
with tools.MCPTools(command=server, env={{"BANNER": "1"}}) as mcp_tools:
    listed = {{tool.name: tool for tool in mcp_tools}}
    print(listed["chatty"].call(""))
    print(listed["chatty"].call(""))
    try:
        listed["broken"].call("")
    except tools.MCPToolError as error:
        print("error:", error)
    print(listed["echo"].call("still fine"))
"""


def test_stray_server_output_is_reported_once_without_tracebacks():
    script = STRAY_SCRIPT.format(server=LEGACY_SERVER[1])
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **REPO_ENV},
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[:2] == ["chatted", "chatted"]
    assert run.stdout.splitlines()[-1] == "still fine"
    error = next(line for line in run.stdout.splitlines() if line.startswith("error:"))
    assert "malformed result" in error
    assert "Weather server" not in error  # the banner is not attached to later errors
    assert "Traceback" not in run.stderr
    assert run.stderr.count("not MCP") == 1
    assert "'Weather server v1.0 ready!'" in run.stderr


# What a OneShotAgent shows the model.


def test_a_oneshot_prompt_shows_each_mcp_tools_arguments(stdio_tools):
    llm = FakeLLM(["I now know the final answer.\nFinal Answer: done"])
    local_weather = originals.get_weather
    executor = agents.Executor(agents.OneShotAgent(llm, [*stdio_tools, local_weather]))
    chains.run(executor, "go")
    prompt = llm.calls[0].messages[-1].content
    assert (
        "add: Adds two integers. Arguments, as a JSON object: a (integer, required); "
        "b (integer, required)\n"
    ) in prompt
    assert (
        "get_weather: Current weather (天气) for a city. Arguments, as a JSON object: city "
        '(string, required): the city name, e.g. 北京; unit (one of "celsius", "fahrenheit", '
        'default "celsius")'
    ) in prompt
    assert "\necho: Returns the text it is given.\n" in prompt  # one string: plain text


def test_served_tools_are_described_to_a_model_like_the_originals(round_trip):
    served = by_name(round_trip)
    for original in originals.make_tools():
        assert served[original.name].prompt_description() == original.prompt_description()


def test_an_empty_action_input_is_the_empty_string_for_a_tool_taking_one(served, round_trip):
    assert by_name(*served)["echo"].call("") == ""
    local = originals.Reverse()
    assert by_name(round_trip)["reverse"].call("") == local.call("") == ""
    assert by_name(round_trip)["shout"].call("") == originals.shout.call("") == ""


def test_an_empty_action_input_leaves_an_optional_string_its_default(served):
    greet = by_name(*served)["greet"]
    assert greet.call("") == asyncio.run(greet.acall("  ")) == "hello world"
    assert greet.call("you") == "hello you"


# `chainkit mcp-serve`: the protocol as the spec has it.


def test_mcp_serve_answers_an_unknown_tool_with_invalid_params(round_trip):
    unknown = tools.MCPTool(
        round_trip,
        server=round_trip.server,
        remote_name="no_such_tool",
        name="no_such_tool",
        description="",
        parameters={},
    )
    with pytest.raises(
        tools.MCPToolError,
        match=r"refused the call to no_such_tool: Unknown tool .*\(error -32602\)",
    ):
        unknown.call("")
    assert by_name(round_trip)["reverse"].call("ok") == "ko"


def test_mcp_serve_keeps_what_tools_print_off_the_protocols_stdout(round_trip, caplog):
    chatter = by_name(round_trip)["chatter"]
    with caplog.at_level(logging.DEBUG, logger="chainkit.mcp"):
        assert chatter.call("one") == "one"
        assert chatter.call("two") == "two"
    assert "not MCP" not in caplog.text


def test_what_a_tool_prints_never_reaches_the_protocol_stream_even_at_exit():
    # Printed text waits in sys.stdout's buffer; flushed at exit, after the server has given
    # stdout's descriptor back, it would land on the protocol's stream.
    from mcp.types import LATEST_PROTOCOL_VERSION

    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "chatter", "arguments": {"text": "hello"}}},
    ]  # fmt: skip
    command = [sys.executable, "-m", "chainkit", "mcp-serve"]
    server = subprocess.Popen(
        [*command, "tests.support.mcp_serve_factories:make_tools"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        # Buffered, as a user's Python writes to a pipe.
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}, **REPO_ENV},
    )
    assert server.stdin is not None and server.stdout is not None
    lines: list[str] = []
    try:
        for request in requests:
            server.stdin.write(json.dumps(request) + "\n")
            server.stdin.flush()
        while not any('"id":2' in line.replace(" ", "") for line in lines):
            lines.append(server.stdout.readline())
            assert lines[-1], "the server closed its stdout before answering"
        rest, said = server.communicate(timeout=20)  # stdin closes: the server exits
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    lines += rest.splitlines()
    answers = [json.loads(line) for line in lines if line.strip()]
    assert all(answer["jsonrpc"] == "2.0" for answer in answers)
    assert answers[-1]["result"]["content"][0]["text"] == "hello"
    assert "chatter says hello" in said


def test_mcp_serve_publishes_schemas_the_tools_accept():
    command = [sys.executable, "-m", "chainkit", "mcp-serve", "chainkit.tools:builtin_tools"]
    with tools.MCPTools(command=command, env=REPO_ENV, cwd=ROOT) as mcp_tools:
        served = by_name(mcp_tools)
        for original in tools.builtin_tools():
            assert served[original.name].parameters == original.parameters
        assert served["calculator"].parameters["required"] == ["input"]
        for optional in ("random_number", "current_time"):
            assert served[optional].parameters["required"] == []
            assert served[optional].call(served[optional].input_from_arguments("{}"))
    assert tools.CurrentTime().input_from_arguments("{}") == ""
    with pytest.raises(tools.ToolError, match="expected"):
        tools.Calculator().input_from_arguments("{}")
