"""A run's outputs as a client gets them: plain JSON, as the events carry them, with a paused
run's `PendingApproval` (which holds the run's whole state) shown as the calls it waits on.

A waiting call is `{"key", "kind", "tool", "tool_call_id", "input"}` and, for `kind`
"approval", the `arguments` an edit gives in the same form, or for `kind` "input", the
tool's `question`. `key` is what a decision names it by (`agents.approval.waiting_key`: the
call's `tool_call_id`, or for a MRKL action its position among the waiting calls)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from chainkit._plain import plain
from chainkit._redact import mask_secret_fields
from chainkit.agents import ApprovalRequest, InputRequest, PendingApproval
from chainkit.agents.approval import PENDING_KEY, waiting_key
from chainkit.callbacks import Event
from chainkit.checkpoints import RunState


def served_outputs(outputs: Mapping[str, Any]) -> dict[str, Any]:
    """`outputs` as plain JSON data; a paused run's "pending" as `{"status": "paused",
    "run_id", "waiting": [calls]}`."""
    shown = dict(outputs)
    pending = shown.get(PENDING_KEY)
    if isinstance(pending, PendingApproval):
        shown[PENDING_KEY] = paused(pending)
    served: dict[str, Any] = plain(shown)
    return served


def withheld(run_id: str) -> str:
    """What a client is told of an error's message (a model's, a tool's or a chain's), which
    may carry a provider's text, keys or prompts: the server log has it under the run id."""
    return f"withheld; the server log has run {run_id}"


def plain_event(event: Event) -> dict[str, Any]:
    """`event.to_dict()`, a chain_end's outputs as `served_outputs` gives them."""
    outputs = event.data.get("outputs") if event.kind == "chain_end" else None
    pending = outputs.get(PENDING_KEY) if isinstance(outputs, Mapping) else None
    if not isinstance(outputs, Mapping) or not isinstance(pending, PendingApproval):
        return event.to_dict()
    # The waiting calls join the event once it is made plain: their "key" is no credential.
    others = {name: value for name, value in outputs.items() if name != PENDING_KEY}
    data = {**event.data, "outputs": others}
    served = dataclasses.replace(event, data=data).to_dict()
    served["data"]["outputs"][PENDING_KEY] = paused(pending)
    return served


def paused(pending: PendingApproval) -> dict[str, Any]:
    return {
        "status": "paused",
        "run_id": pending.state.run_id,
        "waiting": waiting_calls(pending.requests, pending.state),
    }


def waiting_calls(
    requests: Sequence[ApprovalRequest | InputRequest], state: RunState
) -> list[dict[str, Any]]:
    """The calls `state` waits on (its `requests`, in order) as a client sees them."""
    calls = []
    for position, request in enumerate(requests):
        call: dict[str, Any] = {
            "key": waiting_key(request, position),
            "kind": "approval" if isinstance(request, ApprovalRequest) else "input",
            "tool": request.tool,
            "tool_call_id": request.tool_call_id,
        }
        if isinstance(request, ApprovalRequest):
            call["input"] = request.input
            call["arguments"] = mask_secret_fields(request.arguments)
        else:
            call["input"] = _asking_input(request, state)
            call["question"] = mask_secret_fields(request.question)
        calls.append(call)
    calls_data: list[dict[str, Any]] = plain(calls)
    return calls_data


def _asking_input(request: InputRequest, state: RunState) -> str | None:
    """The input of the call whose tool asked `request`'s question."""
    for entry in state.pending:
        action = entry.action
        asking = entry.asked is not None and action.tool == request.tool
        if asking and action.tool_call_id == request.tool_call_id:
            return action.tool_input
    return None
