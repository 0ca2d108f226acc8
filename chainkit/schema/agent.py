"""What an agent decides and what came of it.

These are built on every agent step, so each checks its arguments in a hand-written __init__:
one cheap expression, and the slow check that names the bad field only when it fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chainkit.schema._check import OPTIONAL_STR, check_fields, check_items
from chainkit.schema.message import Message


@dataclass(slots=True, init=False)
class AgentAction:
    """Call `tool` with `tool_input`; `log` is the model text that led to it.

    A native tool call also carries its `tool_call_id` and, in `message_log`, the assistant
    message it came from, so the conversation can be rebuilt exactly.
    """

    tool: str
    tool_input: str
    log: str
    tool_call_id: str | None
    message_log: list[Message]

    def __init__(
        self,
        tool: str,
        tool_input: str,
        log: str = "",
        tool_call_id: str | None = None,
        message_log: list[Message] | None = None,
    ) -> None:
        self.tool = tool
        self.tool_input = tool_input
        self.log = log
        self.tool_call_id = tool_call_id
        self.message_log = [] if message_log is None else message_log
        if not (
            type(tool) is str
            and type(tool_input) is str
            and type(log) is str
            and (tool_call_id is None or type(tool_call_id) is str)
            and type(self.message_log) is list
        ):
            check_fields(
                self,
                (
                    ("tool", (str,), "a str (the tool's name)"),
                    ("tool_input", (str,), "a str"),
                    ("log", (str,), "a str"),
                    ("tool_call_id", OPTIONAL_STR, "a str or None"),
                    ("message_log", (list,), "a list of Message"),
                ),
            )
        if message_log:
            check_items(self, "message_log", Message, "a Message")


@dataclass(slots=True, init=False)
class AgentFinish:
    """The agent is done; `return_values` become the chain's outputs."""

    return_values: dict[str, Any]
    log: str

    def __init__(self, return_values: dict[str, Any], log: str = "") -> None:
        self.return_values = return_values
        self.log = log
        if not (type(return_values) is dict and type(log) is str):
            check_fields(
                self,
                (
                    ("return_values", (dict,), "a dict of output key to value"),
                    ("log", (str,), "a str"),
                ),
            )


@dataclass(slots=True, init=False)
class AgentStep:
    """An action and the observation it produced."""

    action: AgentAction
    observation: str

    def __init__(self, action: AgentAction, observation: str) -> None:
        self.action = action
        self.observation = observation
        if not (type(action) is AgentAction and type(observation) is str):
            check_fields(
                self,
                (("action", (AgentAction,), "an AgentAction"), ("observation", (str,), "a str")),
            )
