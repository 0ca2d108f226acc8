"""The gate a tool call passes before and while it runs: the approval it needs, and the
questions its tool asks (`agents.interrupt`). Both are questions to a person that a run
pauses on and resumes with, through the same state, store and `chains.resume`; an approval
may also be decided inline (`approve=`). Every answer is kept in the call's PendingCall and
saved before the call starts, so a run resumed after a crash applies it: an edit is not
lost, a denied call never runs, and nobody is asked twice."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from chainkit.agents.approval import (
    ApprovalRequest,
    Approver,
    Decision,
    InlineApproval,
    checked_decision,
    decision_data,
    decision_from,
    needs_approval,
    request_for,
    requires_approval_of,
    waiting_key,
)
from chainkit.agents.errors import AgentConfigError, AgentTypeError
from chainkit.agents.interrupts import InputRequest
from chainkit.checkpoints import RunState
from chainkit.checkpoints.state import PendingCall
from chainkit.schema import AgentAction
from chainkit.tools import Tool, Toolset

Request = ApprovalRequest | InputRequest


class Gate:
    """The approvals and questions of one Executor's tool calls. `inline` asks `approve=`;
    a gate that `defers` (no `approve=`, a tool marked) pauses a step before its calls run."""

    __slots__ = ("_toolset", "defers", "inline", "marked", "waits")

    def __init__(self, toolset: Toolset, approve: Approver | None) -> None:
        self._toolset = toolset
        self.marked = marked = any(requires_approval_of(tool) for tool in toolset)
        """Whether any call may need approval: else the gate lets every call through."""
        self.inline = InlineApproval(approve) if approve is not None and marked else None
        self.defers = approve is None and marked
        self.waits: Callable[[AgentAction], bool] | None = self.needs_decision if marked else None
        """Whether a call waits for a decision before it starts; None when no call does."""

    def needs_decision(self, action: AgentAction) -> bool:
        """Whether this call waits for a person's decision before it starts."""
        tool = self._toolset.find(action.tool)
        return tool is not None and needs_approval(tool, action)

    def waiting(self, state: RunState, step: int) -> list[tuple[PendingCall, Request]]:
        """The calls of the state's pending step that wait for a person, with what each
        waits on: a decision on its approval, or the answer to its tool's question."""
        waiting: list[tuple[PendingCall, Request]] = []
        for entry in state.pending:
            tool = self._toolset.find(entry.action.tool)
            if tool is None or entry.observation is not None:
                continue
            action = entry.action
            if entry.asked is not None:
                request: Request = InputRequest(
                    entry.asked, tool.name, action.tool_call_id, state.run_id, step
                )
            elif entry.started or entry.decision is not None or not needs_approval(tool, action):
                continue
            else:
                request = request_for(tool, action, state.run_id, step)
            waiting.append((entry, request))
        return waiting

    def answer(self, state: RunState, answers: object) -> None:
        """Gives the calls the state waits on the answers given when it is resumed: a dict
        keyed by `waiting_key`, or a list in the requests' order. Refuses answers for a run
        that waits for none, answers missing (unless `approve=` decides every call waiting)
        or naming no waiting call, and a decision that is not one."""
        waiting = self.waiting(state, state.iteration)
        if not waiting:
            if answers is not None:
                raise AgentConfigError(
                    f"decisions are for a run paused for approval or a tool's question; run "
                    f"{state.run_id!r} has no call waiting for one, so give none"
                )
            return
        keys = [waiting_key(request, i) for i, (_, request) in enumerate(waiting)]
        if answers is None:
            if self.inline is not None and all(
                isinstance(request, ApprovalRequest) for _, request in waiting
            ):
                return  # approve= decides them
            raise AgentConfigError(
                f"run {state.run_id!r} is paused for approval of calls {keys}: give "
                "decisions (agents.Approve(), Deny(reason) or Edit(arguments)) for each, and "
                "answers for a tool's questions"
            )
        given = _keyed(keys, answers)
        missing = [key for key in keys if key not in given]
        unknown = [key for key in given if key not in keys]
        if missing or unknown:
            raise AgentConfigError(
                f"decisions must name each call waiting for approval or an answer ({keys}): "
                f"missing {missing}, naming no waiting call {unknown}"
            )
        for key, (entry, request) in zip(keys, waiting, strict=True):
            if isinstance(request, ApprovalRequest):
                entry.decision = decision_data(checked_decision(given[key], request))
            else:
                entry.answers.append(_checked_answer(given[key], request))
                entry.asked = None

    def request(
        self, tool: Tool, action: AgentAction, run_id: str | None, step: int
    ) -> ApprovalRequest | None:
        """The approval request for this call, or None when it needs none."""
        if not needs_approval(tool, action):
            return None
        return request_for(tool, action, run_id, step)

    def decided(self, entry: PendingCall | None) -> Decision | None:
        """The decision saved for the call, if any."""
        if entry is None or entry.decision is None:
            return None
        return decision_from(entry.decision)


def _keyed(keys: list[str | int], answers: object) -> dict[Any, object]:
    if isinstance(answers, list | tuple):
        if len(answers) != len(keys):
            raise AgentConfigError(
                f"decisions as a list need one per waiting call ({len(keys)}), got {len(answers)}"
            )
        return dict(zip(keys, answers, strict=True))
    if isinstance(answers, Mapping):
        return dict(answers)
    raise AgentTypeError(
        "decisions must be a dict of tool_call_id (or position) to agents.Approve(), "
        "Deny(reason), Edit(arguments) or a question's answer, or a list in the requests' "
        f"order; got {type(answers).__name__}"
    )


def _checked_answer(answer: object, request: InputRequest) -> object:
    try:
        json.dumps(answer)
    except (TypeError, ValueError) as error:
        raise AgentTypeError(
            f"the answer to the question of {request.tool} must be JSON data: {error}"
        ) from None
    return answer
