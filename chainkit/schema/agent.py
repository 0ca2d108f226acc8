"""What an agent decides and what came of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chainkit.schema.message import Message


@dataclass(slots=True)
class AgentAction:
    """Call `tool` with `tool_input`; `log` is the model text that led to it.

    A native tool call also carries its `tool_call_id` and, in `message_log`, the assistant
    message it came from, so the conversation can be rebuilt exactly.
    """

    tool: str
    tool_input: str
    log: str = ""
    tool_call_id: str | None = None
    message_log: list[Message] = field(default_factory=list)


@dataclass(slots=True)
class AgentFinish:
    """The agent is done; `return_values` become the chain's outputs."""

    return_values: dict[str, Any]
    log: str = ""


@dataclass(slots=True)
class AgentStep:
    """An action and the observation it produced."""

    action: AgentAction
    observation: str
