"""One tool call of an Executor's run, as a "tool" run with its events: the gate before it
(its approval: saved, or asked inline and saved before the call starts), its tool's
questions (`agents.interrupt`), and its output or failure made the observation."""

from __future__ import annotations

from typing import Any, Protocol

from chainkit._stop import stop_escaped
from chainkit.agents._gate import Gate
from chainkit.agents.approval import (
    ApprovalRequest,
    Decision,
    Denial,
    applied,
    decision_data,
    report_decided,
    report_required,
)
from chainkit.agents.errors import UnknownToolError
from chainkit.agents.interrupts import Asked, answering
from chainkit.callbacks.run import Run, enter
from chainkit.checkpoints.state import PendingCall
from chainkit.schema import AgentAction
from chainkit.tools import Tool, ToolError, Toolset
from chainkit.tools.toolset import observation as observation_of

UNKNOWN_TOOL = "(unknown tool)"
"""The name of the run of an action naming no tool of the agent: never the name the model
wrote, which may be anything (the user's words among them), as a run's name becomes a span
name and a trace's label; the run's UnknownToolError names it."""
WAITING = "(waiting for a person's answer)"


class Waiting(str):
    """The observation of a call that waits for a person: not one the model reads; the run
    pauses at the end of its step."""

    __slots__ = ()


class Journal(Protocol):
    """Where a call's answers are saved (`agents._journal.Journal`)."""

    def decided(self, entry: PendingCall, decision: dict[str, Any]) -> None: ...

    def asking(self, entry: PendingCall, question: Any) -> None: ...

    async def settle(self) -> None: ...


class ToolCalls:
    """The tool calls of one Executor. A call of a checkpointed (or pausable) run comes with
    its `entry` in the run's state and the `journal` that saves it."""

    __slots__ = ("_gate", "_handle_errors", "_toolset")

    def __init__(self, toolset: Toolset, gate: Gate, handle_errors: bool) -> None:
        self._toolset = toolset
        self._gate = gate
        self._handle_errors = handle_errors

    def run(
        self,
        action: AgentAction,
        step: int,
        entry: PendingCall | None = None,
        journal: Journal | None = None,
    ) -> str:
        tool = self._toolset.find(action.tool)
        name = UNKNOWN_TOOL if tool is None else tool.name
        with enter("tool", name, None, action.tool_call_id) as run:
            if run.handler is not None:
                run.handler.handle_tool_start(run.name, action.tool_input, action.tool_call_id)
            if tool is None:
                return self._unknown_tool(action, run)
            if self._gate.marked:
                gated = self._gated(tool, action, step, entry, journal, run)
                if isinstance(gated, ApprovalRequest):
                    assert self._gate.inline is not None  # asked of no one else
                    decision = self._gate.inline.decide(gated)
                    gated = self._decided(gated, decision, action, entry, journal, run)
                if isinstance(gated, str):
                    return gated
                action = gated
            try:
                if entry is None:
                    output = _call(tool, action)
                else:
                    with answering(entry.answers):
                        output = _call(tool, action)
            except Asked as asked:
                return self._waits(asked.question, entry, journal, run)
            except BaseException as error:
                return self._tool_failed(tool, error, run)
            return self._tool_ended(output, run)

    async def arun(
        self,
        action: AgentAction,
        step: int,
        entry: PendingCall | None = None,
        journal: Journal | None = None,
    ) -> str:
        tool = self._toolset.find(action.tool)
        name = UNKNOWN_TOOL if tool is None else tool.name
        with enter("tool", name, None, action.tool_call_id) as run:
            if run.handler is not None:
                run.handler.handle_tool_start(run.name, action.tool_input, action.tool_call_id)
            if tool is None:
                return self._unknown_tool(action, run)
            if self._gate.marked:
                gated = self._gated(tool, action, step, entry, journal, run)
                if isinstance(gated, ApprovalRequest):
                    assert self._gate.inline is not None
                    decision = await self._gate.inline.adecide(gated)
                    gated = self._decided(gated, decision, action, entry, journal, run)
                if isinstance(gated, str):
                    return gated
                action = gated
                if journal is not None:  # an async run's: saved before the call starts
                    await journal.settle()
            try:
                if entry is None:
                    output = await _acall(tool, action)
                else:
                    with answering(entry.answers):
                        output = await _acall(tool, action)
            except Asked as asked:
                return self._waits(asked.question, entry, journal, run)
            except BaseException as error:
                return self._tool_failed(tool, error, run)
            return self._tool_ended(output, run)

    def _gated(
        self,
        tool: Tool,
        action: AgentAction,
        step: int,
        entry: PendingCall | None,
        journal: Journal | None,
        run: Run,
    ) -> AgentAction | ApprovalRequest | str:
        """What the gate lets through: the call to make, the approval request a person
        decides inline now, or the observation the call ends with (a saved denial, a wait
        for a person)."""
        gate = self._gate
        request = gate.request(tool, action, run.parent_id, step)
        if request is None:
            return action
        decision = gate.decided(entry)
        if decision is not None:
            return self._applied(request, decision, action, run)
        if gate.inline is None:  # the run pauses for it, as for a question
            return self._waits(None, entry, journal, run)
        report_required(run.handler, request)
        return request

    def _decided(
        self,
        request: ApprovalRequest,
        decision: Decision,
        action: AgentAction,
        entry: PendingCall | None,
        journal: Journal | None,
        run: Run,
    ) -> AgentAction | str:
        """An inline decision, saved before its call starts (for a run that keeps its
        state), applied."""
        if entry is not None and journal is not None:
            journal.decided(entry, decision_data(decision))
        return self._applied(request, decision, action, run)

    def _applied(
        self, request: ApprovalRequest, decision: Decision, action: AgentAction, run: Run
    ) -> AgentAction | str:
        """The call to make after `decision`, or its denial as the observation; the
        decision is reported."""
        report_decided(run.handler, request, decision)
        tool = self._toolset.find(action.tool)
        assert tool is not None  # a call of a tool of the agent was decided
        decided = applied(decision, action, tool)
        return self._tool_ended(decided, run) if isinstance(decided, Denial) else decided

    def _waits(
        self, question: Any, entry: PendingCall | None, journal: Journal | None, run: Run
    ) -> str:
        """The call waits for a person: its question saved, the run pauses after its step."""
        if entry is None or journal is None:
            raise AssertionError("only a run that keeps its state asks a person")
        journal.asking(entry, question)
        return self._tool_ended(Waiting(WAITING), run)

    def _unknown_tool(self, action: AgentAction, run: Run) -> str:
        """The observation for an action naming no tool of the agent, reported as the run's
        error."""
        unknown = UnknownToolError(action.tool, ", ".join(self._toolset.names))
        run.fail(unknown)
        return str(unknown)

    def _tool_failed(self, tool: Tool, error: BaseException, run: Run) -> str:
        """The observation for a tool's failure; re-raises what is not to be observed."""
        if isinstance(error, StopIteration | StopAsyncIteration):
            error = stop_escaped(error, f"tool {tool.name!r}")  # as Tool.acall raises it
        run.fail(error)
        if isinstance(error, ToolError):
            return str(error)
        if self._handle_errors and isinstance(error, Exception):
            # The type tells the model what went wrong: str(KeyError('42')) is only "'42'".
            detail = f": {error}" if str(error) else ""
            return f"Tool error: {type(error).__name__}{detail}"
        raise error

    def _tool_ended(self, output: object, run: Run) -> str:
        text = output if isinstance(output, str) else observation_of(output)
        if run.handler is not None:  # else no one hears the end: no call to make
            run.end(text)
        return text


def _call(tool: Tool, action: AgentAction) -> object:
    if action.tool_call_id is None:
        return tool.call(action.tool_input)
    return tool.call_arguments(action.tool_input)


async def _acall(tool: Tool, action: AgentAction) -> object:
    if action.tool_call_id is None:
        return await tool.acall(action.tool_input)
    return await tool.acall_arguments(action.tool_input)
