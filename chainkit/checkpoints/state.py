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
(when they are JSON). A state written with a key carries `"tag": "hmac-sha256:…"` over all the rest.

Reading a state checks everything before anything is built: JSON data only (no NaN or
infinity, UTF-8, nested at most 100 deep), no field missing, unknown or of another type, and
no fields that contradict each other: a negative iteration, a step in progress without a
plan, a paused run with no call waiting, calls of one step sharing an id, outputs of a run
that has not finished. What the checks cannot tell is a change that leaves a state
consistent; a tag can (see `to_dict`). Whether a call may run without a person's decision is
for the executor, which knows the tools: `agents`' journal refuses a state given as JSON,
untagged, that says a call needing approval started.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from chainkit._text import described, shorten
from chainkit.checkpoints import _json_data, _tag
from chainkit.checkpoints.errors import CheckpointConfigError, StateFormatError
from chainkit.schema import AgentAction, AgentStep, Message

FORMAT = "chainkit.run_state"
VERSION = 1
_SAME_REPLY = "same"
_MIN_KEY_BYTES = 16


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

    def to_dict(self, *, key: bytes | None = None) -> dict[str, Any]:
        """The state's JSON form (see the module); with a `key`, tagged so that a change to it
        is refused by `from_dict(..., key=key)` and by an Executor with that `state_key`."""
        data = {**self.header(), **self.progress(), "steps": step_dicts(self.steps, 0)}
        checked = checked_key(key)
        if checked is not None:
            _json_data.check(data)
            data[_tag.FIELD] = _tag.tag(data, checked)
        return data

    def to_json(self, *, key: bytes | None = None) -> str:
        return json.dumps(self.to_dict(key=key), ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_dict(cls, data: object, *, key: bytes | None = None) -> RunState:
        """The state in `data`, as `to_dict` writes it. Raises StateFormatError, naming what is
        wrong, for anything else: another format or version, a field missing, unknown or of
        the wrong type, values that are not JSON, or fields that contradict each other (see
        the module). With a `key`, `data` must carry the tag `to_dict(key=key)` gives it."""
        if not isinstance(data, Mapping):
            raise StateFormatError(f"a run state is a JSON object, got {described(data)}")
        data = dict(data)
        _json_data.check(data)
        if data.get("format") != FORMAT:
            raise StateFormatError(f"not a chainkit run state: no 'format': {FORMAT!r}")
        if data.get("version") != VERSION:
            raise StateFormatError(
                f"run state version {data.get('version')!r}; this chainkit reads version {VERSION}"
            )
        checked = checked_key(key)
        if checked is not None:
            _tag.verify(data, checked)
        state = _read(data)
        _check_consistent(state)
        return state

    @classmethod
    def from_json(cls, text: str | bytes, *, key: bytes | None = None) -> RunState:
        """The state in `text` (JSON, a str or UTF-8 bytes); raises StateFormatError as
        `from_dict` does, and for text that is not JSON."""
        return cls.from_dict(_json_data.parse(text), key=key)


def checked_key(key: object) -> bytes | None:
    """`key` as a state key, bytes; raises CheckpointConfigError for one that is not bytes
    or is too short to be secret. Its value is never shown."""
    if key is None:
        return None
    if not isinstance(key, bytes | bytearray):
        hint = " (encode it, or better use os.urandom(32))" if isinstance(key, str) else ""
        raise CheckpointConfigError(f"a state key must be bytes{hint}, got {type(key).__name__}")
    if len(key) < _MIN_KEY_BYTES:
        raise CheckpointConfigError(
            f"a state key must hold at least {_MIN_KEY_BYTES} bytes (32 random ones are "
            f"best), got {len(key)}"
        )
    return bytes(key)


def json_problem(value: object) -> str | None:
    """What makes `value` no JSON a state can hold (objects with str keys, arrays, str, finite
    numbers, bool, null; nested at most 100 deep), or None."""
    return _json_data.problem_of(value)


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


_TOP_FIELDS = frozenset(
    ("format", "version", "run_id", "agent", "inputs", "iteration", "status", "outputs")
) | {"steps", "pending", "saved", _tag.FIELD}
_ACTION_FIELDS = ("tool", "tool_input", "log", "tool_call_id", "reply")
_STEP_FIELDS = frozenset((*_ACTION_FIELDS, "observation"))
_PENDING_FIELDS = frozenset(_ACTION_FIELDS) | {
    *("started", "observation", "decision", "answers", "asked")
}
_STATUSES: tuple[Literal["running", "paused", "finished"], ...] = ("running", "paused", "finished")


def _read(data: Mapping[str, Any]) -> RunState:
    """The state in `data` (JSON data already checked), each field checked as it is read."""
    _known_fields(data, _TOP_FIELDS, "the state")
    agent = _field(data, "agent", dict, "an object", "")
    _known_fields(agent, frozenset(("kind", "tools")), "agent")
    tools = _field(agent, "tools", list, "a list", "agent.")
    steps: list[AgentStep] = []
    for i, item in enumerate(_field(data, "steps", list, "a list", "")):
        where = f"steps[{i}]."
        item = _object(item, where, _STEP_FIELDS)
        action = _action(item, steps[-1].action if steps else None, where)
        steps.append(AgentStep(action, _field(item, "observation", str, "a str", where)))
    pending: list[PendingCall] = []
    for i, item in enumerate(_field(data, "pending", list, "a list", "")):
        where = f"pending[{i}]."
        item = _object(item, where, _PENDING_FIELDS)
        action = _action(item, pending[-1].action if pending else None, where)
        started = _field(item, "started", bool, "true or false", where)
        observation = _field(item, "observation", (str, type(None)), "a str or null", where)
        decision = _decision(item.get("decision"), where)
        answers = _optional(item, "answers", [], list, "a list", where)
        asked = item.get("asked")  # any JSON, or null
        pending.append(PendingCall(action, started, observation, decision, list(answers), asked))
    iteration = _field(data, "iteration", int, "an int", "")
    status = _field(data, "status", str, "a str", "")
    if status not in _STATUSES:
        raise _malformed(f"status must be one of {list(_STATUSES)}, got {status!r:.60}")
    return RunState(
        _field(data, "run_id", str, "a str", ""),
        _field(agent, "kind", str, "a str", "agent."),
        [_text(name, f"agent.tools[{i}]") for i, name in enumerate(tools)],
        dict(_field(data, "inputs", dict, "an object", "")),
        steps,
        pending,
        iteration,
        _STATUSES[_STATUSES.index(status)],
        _field(data, "outputs", (dict, type(None)), "an object or null", ""),
        _optional(data, "saved", 0, int, "an int", ""),
    )


def _check_consistent(state: RunState) -> None:
    """Raises StateFormatError for fields no run writes together: what a hand-edited state
    could use to skip a limit or claim a decision nobody took."""
    if state.iteration < 0:
        raise _malformed(f"iteration is {state.iteration}; a run counts its plans from 0")
    if state.pending and state.iteration == 0:
        raise _malformed("iteration is 0 but a step is in progress: each step comes from a plan")
    if not state.run_id:
        raise _malformed("run_id is empty")
    if state.saved < 0:
        raise _malformed(f"saved is {state.saved}; a run counts its saves from 0")
    if state.status != "finished" and state.outputs is not None:
        raise _malformed(f"a {state.status} run has outputs; only a finished one has them")
    if state.status == "finished" and state.pending:
        raise _malformed("a finished run has calls in progress")
    ids = Counter(p.action.tool_call_id for p in state.pending if p.action.tool_call_id)
    repeated = sorted(i for i, count in ids.items() if count > 1)
    if repeated:
        raise _malformed(f"calls in progress share tool_call_id(s) {repeated}")
    if state.status == "paused" and not state.pending:
        raise _malformed("a paused run has no call waiting")


def _action(item: Mapping[str, Any], previous: AgentAction | None, where: str) -> AgentAction:
    reply = _field(item, "reply", (dict, str, type(None)), "an object, 'same' or null", where)
    if isinstance(reply, str):
        if reply != _SAME_REPLY or previous is None or not previous.message_log:
            raise _malformed(f"{where}reply {reply!r:.40} names no reply before it")
        log = [previous.message_log[0]]
    else:
        log = [] if reply is None else [_message(reply, where)]
    return AgentAction(
        _field(item, "tool", str, "a str", where),
        _field(item, "tool_input", str, "a str", where),
        _field(item, "log", str, "a str", where),
        _field(item, "tool_call_id", (str, type(None)), "a str or null", where),
        log,
    )


def _decision(value: object, where: str) -> dict[str, Any] | None:
    """A call's saved approval decision, as `agents.approval.decision_data` writes it."""
    if value is None:
        return None
    if isinstance(value, dict):
        kind = value.get("kind")
        if kind == "approve" or (kind == "deny" and isinstance(value.get("reason"), str)):
            return value
        if kind == "edit" and isinstance(value.get("arguments"), dict | str):
            return value
    raise _malformed(f"{where}decision is not one: {described(value)}")


def _optional(
    data: Mapping[str, Any], name: str, default: Any, kind: type, expected: str, where: str
) -> Any:
    """`data[name]` as `_field` reads it, or `default` when absent (a state written before
    the field was)."""
    return _field(data, name, kind, expected, where) if name in data else default


def _message(reply: dict[str, Any], where: str) -> Message:
    try:
        return Message.from_dict(reply)
    except (ValueError, TypeError) as error:  # MessageFormatError is both
        raise _malformed(f"{where}reply: {error}") from None


def _object(item: object, where: str, fields: frozenset[str]) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise _malformed(f"{where.rstrip('.')} must be an object, got {described(item)}")
    _known_fields(item, fields, where.rstrip("."))
    return item


def _known_fields(data: Mapping[str, Any], fields: frozenset[str], where: str) -> None:
    unknown = sorted(set(data) - fields)
    if unknown:
        raise _malformed(f"{where} has unknown field(s) {[shorten(u, 40) for u in unknown]}")


def _field(
    data: Mapping[str, Any], name: str, kind: type | tuple[type, ...], expected: str, where: str
) -> Any:
    """`data[name]`, which must be of `kind` (a bool is no int); raises naming the field."""
    if name not in data:
        raise _malformed(f"{where}{name} is missing")
    value = data[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise _malformed(f"{where}{name} must be {expected}, got {described(value)}")
    return value


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise _malformed(f"{where} must be a str, got {described(value)}")
    return value


def _malformed(problem: str) -> StateFormatError:
    return StateFormatError(f"run state is malformed: {problem}")
