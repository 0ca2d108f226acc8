"""A payments agent for approval tests: a `pay` tool marked `requires_approval`, a free
`lookup` tool, a model making tool calls at once then answering with what it observed, and an
`approve=` function answering from a script while keeping each request."""

from __future__ import annotations

import json
from typing import Any

from chainkit import agents, tools
from chainkit.llms import BaseModel, ModelRequest
from chainkit.schema import FunctionCall, Message, ToolCall


class Payments:
    """A `pay` tool that records each payment it made, and a free `lookup` tool."""

    def __init__(self, requires_approval: Any = True) -> None:
        self.paid: list[tuple[str, int]] = []

        @tools.tool(requires_approval=requires_approval)
        def pay(to: str, amount: int) -> str:
            """Pays `amount` to `to`."""
            self.paid.append((to, amount))
            return f"paid {amount} to {to}"

        @tools.tool
        def lookup(name: str) -> str:
            """Looks a person up."""
            return f"{name} is known"

        self.pay = pay
        self.lookup = lookup


class CallsThenReports(BaseModel):
    """Makes these tool calls at once, then answers with every observation it read."""

    def __init__(self, *calls: tuple[str, dict[str, Any]]) -> None:
        super().__init__()
        self.calls = calls

    def _generate(self, request: ModelRequest) -> Message:
        if request.messages[-1].role == "tool":
            seen = [m.content for m in request.messages if m.role == "tool"]
            return Message.assistant(" | ".join(str(text) for text in seen))
        return Message.assistant(
            "",
            tool_calls=[
                ToolCall(f"call-{i}", FunctionCall(name, json.dumps(arguments)))
                for i, (name, arguments) in enumerate(self.calls)
            ],
        )


def tool_calling(payments: Payments, *calls: tuple[str, dict[str, Any]]) -> agents.Agent:
    return agents.ToolCallingAgent(CallsThenReports(*calls), [payments.pay, payments.lookup])


class Recorded:
    """An approve= function answering from a script by tool call id, keeping each request."""

    def __init__(self, decide: Any) -> None:
        self.decide = decide
        self.requests: list[agents.ApprovalRequest] = []

    def __call__(self, request: agents.ApprovalRequest) -> Any:
        self.requests.append(request)
        return self.decide(request)
