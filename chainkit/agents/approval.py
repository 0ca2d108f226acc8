"""Approving tool calls: which calls need a person's yes, what they are asked, what they
answer, and what the answer does to the call.

The one home of approval: the Executor's inline `approve=` callback and a run resumed with
decisions taken elsewhere both go through `needs_approval`, `request_for` and `applied`; the
decision types (`Approve`, `Deny`, `Edit`) are what either gives back, keyed by the call's
`tool_call_id` when given in bulk, and kept in the run's state as JSON (`decision_data`).
Approval is one kind of question a run pauses on (`agents._gate`): a tool's own questions
(`agents.interrupt`) wait and resume the same way.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from chainkit._stop import to_thread
from chainkit.agents.errors import AgentTypeError
from chainkit.agents.interrupts import InputRequest
from chainkit.callbacks.combining import CombiningHandler
from chainkit.checkpoints import RunState
from chainkit.schema import AgentAction
from chainkit.tools import Tool


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A tool call waiting for a person's decision.

    `tool` is the tool's name; `input` the call's input as the model wrote it (a native call's
    JSON arguments, or a MRKL Action Input); `arguments` the same read as the tool takes it: a
    dict for a JSON object, else the text. `tool_call_id` is the model's id of the call (None
    for a MRKL action), `run_id` the id of the Executor's run, and `step` the number of the
    run's step (from 1; parallel calls of one step share it).
    """

    tool: str
    arguments: Any
    input: str
    tool_call_id: str | None
    run_id: str | None
    step: int


@dataclass(frozen=True, slots=True)
class Approve:
    """Run the call as the model wrote it."""

    kind: Literal["approve"] = field(default="approve", init=False)


@dataclass(frozen=True, slots=True)
class Deny:
    """Do not run the call: the model reads a denial, with `reason`, as its observation."""

    reason: str = ""
    kind: Literal["deny"] = field(default="deny", init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str):
            raise AgentTypeError(f"Deny(reason) takes text, got {type(self.reason).__name__}")


@dataclass(frozen=True, slots=True)
class Edit:
    """Run the call with these arguments instead, in the form the request showed them: a dict
    (a JSON object of arguments), or text for a tool taking one string (or a MRKL Action
    Input). The tool checks them as it checks the model's: arguments it refuses become the
    observation, naming what was wrong."""

    arguments: dict[str, Any] | str
    kind: Literal["edit"] = field(default="edit", init=False)

    def __post_init__(self) -> None:
        if isinstance(self.arguments, str):
            return
        if not isinstance(self.arguments, dict):
            raise AgentTypeError(
                "Edit(arguments) takes a dict or text, got "
                f"{type(self.arguments).__name__}: {self.arguments!r:.200}"
            )
        try:
            json.dumps(self.arguments)
        except (TypeError, ValueError) as error:
            raise AgentTypeError(f"Edit(arguments) must be JSON data: {error}") from None

    @property
    def text(self) -> str:
        """The arguments as the call's input text."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


Decision = Approve | Deny | Edit
"""What a person decided about one call."""

Approver = Callable[[ApprovalRequest], "Decision | Awaitable[Decision]"]
"""The Executor's `approve=`: given a request, returns (or, in async runs, may await) a
Decision."""

_DECISIONS = (Approve, Deny, Edit)
DENIAL_PREFIX = "Call denied by the user"


class Denial(str):
    """The observation of a denied call: marked so that a `return_direct` tool's denial does not
    become the run's answer."""

    __slots__ = ()


def denial(tool: str, reason: str) -> Denial:
    """What the model reads for a denied call: plainly a denial, not the tool's output."""
    because = f": {reason}" if reason.strip() else " (no reason given)"
    return Denial(f"{DENIAL_PREFIX}; {tool} did not run{because}")


def requires_approval_of(tool: Tool) -> bool:
    """Whether any call of `tool` may need approval (its mark is not False)."""
    return getattr(tool, "requires_approval", False) is not False


def needs_approval(tool: Tool, action: AgentAction) -> bool:
    """Whether this call of `tool` needs a decision: its mark, or the mark's verdict on the
    call's arguments (a mark that cannot read them, or that raises, asks)."""
    mark = getattr(tool, "requires_approval", False)
    if mark is False or mark is True:
        return mark
    if not callable(mark):
        return bool(mark)
    try:
        return bool(mark(arguments_of(tool, action)))
    except Exception:
        return True


def arguments_of(tool: Tool, action: AgentAction) -> Any:
    """The call's arguments as a mark and a person read them: the input text for a tool taking
    one string (a plain Tool), else the JSON object the input holds (the text when it holds
    none)."""
    text = action.tool_input
    if _takes_text(tool):
        return tool.input_from_arguments(text) if action.tool_call_id is not None else text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


def _takes_text(tool: Tool) -> bool:
    """Whether the tool takes one string, as a plain Tool does (its parameters are Tool's)."""
    return type(tool).parameters is Tool.parameters


def request_for(tool: Tool, action: AgentAction, run_id: str | None, step: int) -> ApprovalRequest:
    try:
        arguments = arguments_of(tool, action)
    except Exception:
        arguments = action.tool_input
    return ApprovalRequest(
        tool.name, arguments, action.tool_input, action.tool_call_id, run_id, step
    )


def applied(decision: Decision, action: AgentAction, tool: Tool) -> AgentAction | Denial:
    """The call of `tool` to make after `decision`, or the observation of its denial."""
    if isinstance(decision, Deny):
        return denial(tool.name, decision.reason)
    if isinstance(decision, Edit):
        return replace(action, tool_input=_edited_input(decision, action, tool))
    return action


def _edited_input(edit: Edit, action: AgentAction, tool: Tool) -> str:
    """The call's input for `edit`, given in the form its request showed the arguments: text
    for a tool taking one string, which a native call sends as `{"input": text}`."""
    if isinstance(edit.arguments, str) and action.tool_call_id is not None and _takes_text(tool):
        return json.dumps({"input": edit.arguments}, ensure_ascii=False)
    return edit.text


def decision_data(decision: Decision) -> dict[str, Any]:
    """The decision as the run's state keeps it (JSON)."""
    if isinstance(decision, Deny):
        return {"kind": "deny", "reason": decision.reason}
    if isinstance(decision, Edit):
        return {"kind": "edit", "arguments": decision.arguments}
    return {"kind": "approve"}


def decision_from(data: Any) -> Decision:
    """The decision a run's state kept (`decision_data`); AgentTypeError for one that is not."""
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == "approve":
        return Approve()
    if kind == "deny":
        return Deny(data.get("reason", ""))
    if kind == "edit" and "arguments" in data:
        return Edit(data["arguments"])
    raise AgentTypeError(f"a run state's approval decision is not one: {data!r:.100}")


def checked_decision(decision: object, request: ApprovalRequest) -> Decision:
    if isinstance(decision, _DECISIONS):
        return decision
    raise AgentTypeError(
        f"approve= returned {type(decision).__name__} ({decision!r:.100}) for the call of "
        f"{request.tool}: return agents.Approve(), agents.Deny(reason) or agents.Edit(arguments)"
    )


def check_approver(approve: object) -> None:
    """Refuses an `approve=` that is not callable (without one, calls needing approval pause
    the run: see `PendingApproval`)."""
    if approve is not None and not callable(approve):
        raise AgentTypeError(
            f"approve must be a function taking an agents.ApprovalRequest, got "
            f"{type(approve).__name__}"
        )


PENDING_KEY = "pending"
"""The output key of a run paused for approval: its `PendingApproval`."""


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A run of an Executor that stopped for people's answers: at a step with calls needing
    approval (an Executor without `approve=`; the step's other calls wait with them, and run
    once the run is resumed), or at a tool's question (`agents.interrupt`; the step's other
    calls ran). `requests` are what it waits on, in the step's order: an
    `agents.ApprovalRequest` (answered by a decision) or an `agents.InputRequest` (answered
    by any JSON value). `state` is the run's state (`state.to_json()` can be stored
    anywhere). Continue it with `chains.resume(executor, state, decisions)`."""

    requests: list[ApprovalRequest | InputRequest]
    state: RunState


def waiting_key(request: ApprovalRequest | InputRequest, position: int) -> str | int:
    """The key of a waiting call's answer: its `tool_call_id`, or for a call without one
    (a MRKL action) its position among the requests."""
    return position if request.tool_call_id is None else request.tool_call_id


def report_required(handler: CombiningHandler | None, request: ApprovalRequest) -> None:
    if handler is not None:
        handler.handle_approval_required(request.tool, request.input, request.tool_call_id)


def report_decided(
    handler: CombiningHandler | None, request: ApprovalRequest, decision: Decision
) -> None:
    if handler is not None:
        reason = decision.reason if isinstance(decision, Deny) else None
        edited = decision.text if isinstance(decision, Edit) else None
        handler.handle_approval_decided(
            request.tool, decision.kind, reason, edited, request.tool_call_id
        )


class InlineApproval:
    """An Executor's `approve=` function. A sync one is asked one request at a time (parallel
    calls of a step wait their turn), so a person at a terminal gets one question at a time."""

    __slots__ = ("_approve", "_is_async", "_lock")

    def __init__(self, approve: Approver) -> None:
        self._approve = approve
        self._is_async = _is_async(approve)
        self._lock = threading.Lock()

    def decide(self, request: ApprovalRequest) -> Decision:
        if self._is_async:
            raise AgentTypeError(
                f"approve= is an async function, which a sync run cannot await (asked about "
                f"{request.tool}): pass a sync function, or run with chains.acall"
            )
        decision = self._asked(request)
        if inspect.isawaitable(decision):
            _close(decision)
            raise AgentTypeError(
                f"approve= returned an awaitable for the call of {request.tool}, which a sync "
                "run cannot await: pass a sync function, or run with chains.acall"
            )
        return checked_decision(decision, request)

    async def adecide(self, request: ApprovalRequest) -> Decision:
        """The decision of an async `approve` (awaited for parallel calls at once), or of a
        sync one in a worker thread, one request at a time: a person at a terminal blocks
        no event loop."""
        decision: object
        if self._is_async:
            decision = self._approve(request)
        else:
            decision = await to_thread("approve=", self._asked, request)
        if inspect.isawaitable(decision):
            decision = await decision
        return checked_decision(decision, request)

    def _asked(self, request: ApprovalRequest) -> object:
        with self._lock:
            return self._approve(request)


def _is_async(approve: object) -> bool:
    call = getattr(approve, "__call__", None)  # noqa: B004 - an object's async __call__ counts
    return inspect.iscoroutinefunction(approve) or inspect.iscoroutinefunction(call)


def _close(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()  # a coroutine never awaited warns otherwise
