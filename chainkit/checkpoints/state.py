"""A run's state as data: what an Executor needs to continue a run in another process, and its
one JSON form (`RunState.to_dict`, versioned).

The form, version 1::

    {"format": "chainkit.run_state", "version": 1, "run_id": "…",
     "agent": {"kind": "ToolCallingAgent", "tools": ["add", "write"]},
     "inputs": {"input": "…"}, "iteration": 2, "status": "running", "outputs": null,
     "steps": [{"tool": "add", "tool_input": "…", "log": "…", "tool_call_id": "c1",
                "reply": {…a Message…} | "same" | null, "observation": "…"}],
     "pending": [{…a step without its observation…, "started": true,
                  "observation": "…" | null, "decision": {…} | null, "answers": […],
                  "asked": … | null}],
     "saved": 3}

`status` is "running" (also for a run whose process died), "paused" (its pending calls wait for
approval, none started) or "finished". `steps` are the completed steps; `pending` the calls of
the step in progress, each `started` once it may have begun and with its `observation` once it
completed. A call's `decision` is a person's decision on its approval (`{"kind": "approve"}`,
`{"kind": "deny", "reason": …}`, `{"kind": "edit", "arguments": …}`), saved before the call
starts; `answers` are the answers to the questions its tool asked (`agents.interrupt`), in
order, and `asked` the question it waits on (null when it waits for none).
`saved` counts the saves of the run in its store: a store refuses a state older than its
record (see `checkpoints.Checkpointer`). `reply` is the assistant message a native call came
from; "same" says it is the previous call's (one reply, several calls), so the conversation is
rebuilt exactly. `iteration` counts the model's plans so far; `outputs` are a finished run's
(when they are JSON).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from chainkit.checkpoints.errors import StateFormatError
from chainkit.schema import AgentAction, AgentStep, Message

FORMAT = "chainkit.run_state"
VERSION = 1
_SAME_REPLY = "same"


@dataclass(slots=True)
class PendingCall:
    """A call of the step in progress: `started` once it may have begun; its `observation`
    once it completed."""

    action: AgentAction
    started: bool = False
    observation: str | None = None
    decision: dict[str, Any] | None = None
    """A person's decision on the call's approval, as JSON (`agents.approval.decision_data`)."""
    answers: list[Any] = field(default_factory=list)
    """The answers (JSON) to the questions the call's tool asked (`agents.interrupt`)."""
    asked: Any = None
    """The question (JSON) of the call's tool that waits for an answer; None when none does."""


@dataclass(slots=True)
class RunState:
    """A run of an Executor as data: enough to continue it in another process."""

    run_id: str
    agent: str
    """The agent's kind: its class name."""
    tools: list[str]
    inputs: dict[str, Any]
    steps: list[AgentStep] = field(default_factory=list)
    pending: list[PendingCall] = field(default_factory=list)
    iteration: int = 0
    status: Literal["running", "paused", "finished"] = "running"
    """"paused": stopped at a step whose calls wait for a person's decisions (approval)."""
    outputs: dict[str, Any] | None = None
    """A finished run's outputs, when they are JSON (a typed answer is not)."""
    saved: int = 0
    """How many times the run was saved in its store: the version of the record this state
    was read from or last written as (0: never saved)."""

    def header(self) -> dict[str, Any]:
        """The part that never changes during the run."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "run_id": self.run_id,
            "agent": {"kind": self.agent, "tools": list(self.tools)},
            "inputs": self.inputs,
        }

    def progress(self) -> dict[str, Any]:
        """The part that changes at each step, but the completed steps."""
        return {
            "iteration": self.iteration,
            "status": self.status,
            "outputs": self.outputs,
            "pending": [
                {
                    **action_dict(p.action, _previous(self.pending, i)),
                    "started": p.started,
                    "observation": p.observation,
                    "decision": p.decision,
                    "answers": p.answers,
                    "asked": p.asked,
                }
                for i, p in enumerate(self.pending)
            ],
            "saved": self.saved,
        }

    def to_dict(self) -> dict[str, Any]:
        """The state's JSON form (see the module)."""
        return {**self.header(), **self.progress(), "steps": step_dicts(self.steps, 0)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunState:
        """The state in `data`, as `to_dict` writes it; raises StateFormatError for another
        format or version, or a field missing or of the wrong type."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise StateFormatError(f"not a chainkit run state: no 'format': {FORMAT!r}")
        if data.get("version") != VERSION:
            raise StateFormatError(
                f"run state version {data.get('version')!r}; this chainkit reads version {VERSION}"
            )
        try:
            agent = data["agent"]
            steps = read_steps(data["steps"])
            pending: list[PendingCall] = []
            for item in data["pending"]:
                action = _action(item, pending[-1].action if pending else None)
                started, observation = bool(item["started"]), item["observation"]
                decision, asked = _decision(item.get("decision")), item.get("asked")
                answers = _answers(item.get("answers", []))
                entry = PendingCall(action, started, observation, decision, answers, asked)
                pending.append(entry)
            return cls(
                _text(data["run_id"], "run_id"),
                _text(agent["kind"], "agent kind"),
                [_text(name, "tool name") for name in agent["tools"]],
                dict(data["inputs"]),
                steps,
                pending,
                int(data["iteration"]),
                _status(data["status"]),
                data.get("outputs"),
                int(data.get("saved", 0)),
            )
        except StateFormatError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise StateFormatError(
                f"run state is malformed: {type(error).__name__}: {error}"
            ) from None

    @classmethod
    def from_json(cls, text: str) -> RunState:
        try:
            data = json.loads(text)
        except ValueError as error:
            raise StateFormatError(f"run state is not JSON: {error}") from None
        return cls.from_dict(data)


def _previous(items: Sequence[PendingCall], index: int) -> AgentAction | None:
    return items[index - 1].action if index else None


def action_dict(action: AgentAction, previous: AgentAction | None) -> dict[str, Any]:
    """An action as JSON; its reply is "same" when it is the `previous` action's object."""
    reply = action.message_log[0] if action.message_log else None
    written: object = None
    if reply is not None:
        same = previous is not None and previous.message_log and previous.message_log[0] is reply
        written = _SAME_REPLY if same else reply.to_dict()
    return {
        "tool": action.tool,
        "tool_input": action.tool_input,
        "log": action.log,
        "tool_call_id": action.tool_call_id,
        "reply": written,
    }


def step_dicts(steps: Sequence[AgentStep], start: int) -> list[dict[str, Any]]:
    """`steps[start:]` as JSON (a reply shared with the step before `start` is "same")."""
    return [
        {
            **action_dict(steps[i].action, steps[i - 1].action if i else None),
            "observation": steps[i].observation,
        }
        for i in range(start, len(steps))
    ]


def read_steps(items: Sequence[Mapping[str, Any]]) -> list[AgentStep]:
    steps: list[AgentStep] = []
    for item in items:
        action = _action(item, steps[-1].action if steps else None)
        steps.append(AgentStep(action, _text(item["observation"], "observation")))
    return steps


def _action(item: Mapping[str, Any], previous: AgentAction | None) -> AgentAction:
    reply = item["reply"]
    if reply == _SAME_REPLY:
        if previous is None or not previous.message_log:
            raise StateFormatError("run state is malformed: reply 'same' with no reply before")
        log = [previous.message_log[0]]
    else:
        log = [] if reply is None else [Message.from_dict(reply)]
    call_id = item["tool_call_id"]
    return AgentAction(
        _text(item["tool"], "tool"),
        _text(item["tool_input"], "tool_input"),
        _text(item["log"], "log"),
        None if call_id is None else _text(call_id, "tool_call_id"),
        log,
    )


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise StateFormatError(f"run state is malformed: {what} must be a str, got {value!r:.60}")
    return value


def _decision(value: object) -> dict[str, Any] | None:
    """A call's saved approval decision, as `agents.approval.decision_data` writes it."""
    if value is None:
        return None
    if isinstance(value, dict):
        kind = value.get("kind")
        if kind == "approve" or (kind == "deny" and isinstance(value.get("reason"), str)):
            return value
        if kind == "edit" and isinstance(value.get("arguments"), dict | str):
            return value
    raise StateFormatError(f"run state is malformed: a call's decision is not one: {value!r:.100}")


def _answers(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise StateFormatError(
            f"run state is malformed: a call's answers must be a list, got {value!r:.60}"
        )
    return list(value)


def _status(value: object) -> Literal["running", "paused", "finished"]:
    if value == "finished":
        return "finished"
    return "paused" if value == "paused" else "running"
