"""A tool run carries the call id of the action it carries out: its tool_start, tool_end and
tool_error say which of the agent's (possibly parallel) tool calls they answer, to a handler,
in a streamed event and in a trace file line."""

from __future__ import annotations

import json
import threading

import pytest

from chainkit import agents, callbacks, chains, tools
from chainkit.llms import BaseModel, FakeLLM, ModelRequest
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.event_recorder import EventRecorder
from tests.support.modes import Mode
from tests.support.stub_tools import Echo

TOOL_EVENTS = ("tool_start", "tool_end", "tool_error")


class Fails(tools.Tool):
    name = "fails"
    description = "always fails"

    def call(self, input: str) -> str:
        raise RuntimeError("broken")


class ThreeCallsThenAnswer(BaseModel):
    """Calls echo, fails and a tool it was not given at once, then answers."""

    def _generate(self, request: ModelRequest) -> Message:
        if request.messages[-1].role == "tool":
            return Message.assistant("done")
        calls = [
            ToolCall(f"id-{name}", FunctionCall(name, '{"input": "x"}'))
            for name in ("echo", "fails", "missing")
        ]
        return Message.assistant("", tool_calls=calls)


def parallel_executor(**settings: object) -> agents.Executor:
    agent = agents.ToolCallingAgent(ThreeCallsThenAnswer(), [Echo(), Fails()])
    return agents.Executor(agent, handle_tool_errors=True, **settings)  # type: ignore[arg-type]


EXPECTED = {
    ("tool_start", "echo", "id-echo"),
    ("tool_end", "echo", "id-echo"),
    ("tool_start", "fails", "id-fails"),
    ("tool_error", "fails", "id-fails"),
    ("tool_start", "(unknown tool)", "id-missing"),
    ("tool_error", "(unknown tool)", "id-missing"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("settings", [{}, {"max_execution_time": 60}], ids=["plain", "deadline"])
def test_a_handler_hears_the_call_id_of_each_parallel_tool_call(
    mode: Mode, events: EventRecorder, settings: dict[str, object]
):
    assert mode.run(parallel_executor(**settings), "q", callbacks=events) == "done"
    heard = {(name, tool, call_id) for name, tool, _, call_id in events.heard(*TOOL_EVENTS)}
    assert heard == EXPECTED
    actions = [action.tool_call_id for _, action in events.heard("agent_action")]
    assert actions == ["id-echo", "id-fails", "id-missing"]


@pytest.mark.timeout(60)
def test_stream_events_and_trace_lines_carry_the_call_id(tmp_path):
    path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(path) as trace:
        streamed = list(chains.stream(parallel_executor(), "q", callbacks=trace))
    from_stream = {
        (e.kind, e.name, e.data["tool_call_id"]) for e in streamed if e.kind in TOOL_EVENTS
    }
    assert from_stream == EXPECTED
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    from_file = {
        (line["kind"], line["name"], line["data"]["tool_call_id"])
        for line in lines
        if line["kind"] in TOOL_EVENTS
    }
    assert from_file == EXPECTED


class Hangs(tools.Tool):
    name = "hangs"
    description = "returns only when released"

    def __init__(self) -> None:
        self.release = threading.Event()

    def call(self, input: str) -> str:
        self.release.wait(30)
        return "late"


@pytest.mark.timeout(60)
def test_a_tool_call_abandoned_at_the_deadline_reports_its_call_id(events: EventRecorder):
    hangs = Hangs()
    reply = Message.assistant(
        "", tool_calls=[ToolCall("id-hangs", FunctionCall("hangs", '{"input": "x"}'))]
    )
    agent = agents.ToolCallingAgent(FakeLLM([reply]), [hangs])
    executor = agents.Executor(agent, max_execution_time=0.2)
    try:
        with pytest.raises(agents.NotFinishedError):
            chains.run(executor, "q", callbacks=events)
    finally:
        hangs.release.set()
    [(_, tool, error, call_id)] = events.heard("tool_error")
    assert (tool, type(error).__name__, call_id) == ("hangs", "DeadlineExceededError", "id-hangs")


def test_a_mrkl_action_has_no_call_id_and_its_tool_events_say_so(events: EventRecorder):
    llm = FakeLLM(["Action: echo\nAction Input: hi", "Final Answer: hi"])
    executor = agents.Executor(agents.OneShotAgent(llm, [Echo()]))
    assert chains.run(executor, "q", callbacks=events) == "hi"
    [(_, action)] = events.heard("agent_action")
    assert action.tool_call_id is None
    assert [call_id for *_, call_id in events.heard(*TOOL_EVENTS)] == [None, None]
