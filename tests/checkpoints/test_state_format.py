"""A run state given as JSON is read safely: whatever the text (deep, huge, not a number, not
UTF-8, of the wrong shape), the answer is a RunState or a StateFormatError naming what was
wrong; a hand-edited state cannot skip approval or the iteration limit; a tagged state refuses
any change."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit import agents, chains, checkpoints
from chainkit.llms import BaseModel, ModelRequest
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.approvals import Payments, tool_calling

CALLS = (("pay", {"to": "bob", "amount": 900}), ("pay", {"to": "ann", "amount": 9}))
KEY = b"k" * 32


def _paused(payments: Payments | None = None) -> checkpoints.RunState:
    executor = agents.Executor(tool_calling(payments or Payments(), *CALLS))
    pending: agents.PendingApproval = chains.call(executor, {"input": "pay them"})["pending"]
    return pending.state


def _refused(data: object, *expected: str, key: bytes | None = None) -> None:
    text = data if isinstance(data, str | bytes) else None
    with pytest.raises(checkpoints.StateFormatError) as refused:
        if text is None:
            checkpoints.RunState.from_dict(data, key=key)
        else:
            checkpoints.RunState.from_json(text, key=key)
    for part in expected:
        assert part in str(refused.value)


# --- malformed text and values: a StateFormatError naming what, never the reader's errors ---


def test_a_state_nested_100000_deep_is_refused_as_text_and_as_a_dict() -> None:
    _refused('{"inputs": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested")
    deep: list[Any] = []
    inner = deep
    for _ in range(100_000):
        inner.append([])
        inner = inner[0]
    data = _paused().to_dict()
    data["inputs"] = {"input": deep}
    _refused(data, "inputs.input", "nested more than 100")


@pytest.mark.parametrize(
    ("number", "expected"),
    [("1e999", "1e999 is out of range"), ("NaN", "NaN"), ("-Infinity", "-Infinity")],
)
def test_numbers_json_cannot_hold_are_refused(number: str, expected: str) -> None:
    text = _paused().to_json().replace('"iteration": 1', f'"iteration": {number}')
    _refused(text, expected)


def test_a_huge_int_is_refused_as_text_and_as_a_dict() -> None:
    text = _paused().to_json().replace('"iteration": 1', f'"iteration": {"9" * 5000}')
    _refused(text, "not JSON")
    data = _paused().to_dict()
    data["inputs"]["n"] = 10**5000
    _refused(data, "inputs.n", "more than 3,900 digits")


def test_values_that_are_not_json_are_refused_in_a_dict() -> None:
    for value in (float("nan"), math.inf, {1: "int key"}, {"a": object()}, (1, {2: 3})):
        data = _paused().to_dict()
        data["inputs"]["x"] = value
        _refused(data, "inputs.x")


@pytest.mark.parametrize("key", sorted(set(_paused().to_dict()) - {"saved"}))  # 0 if absent
def test_each_missing_field_is_named(key: str) -> None:
    data = _paused().to_dict()
    del data[key]
    _refused(data, key)


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("iteration",), "3", "iteration must be an int, got str '3'"),
        (("iteration",), True, "iteration must be an int, got bool True"),
        (("iteration",), 1.5, "iteration must be an int"),
        (("status",), "sleeping", "status must be one of"),
        (("pending", 0, "started"), "yes", "pending[0].started must be true or false"),
        (("pending", 0, "tool"), 7, "pending[0].tool must be a str"),
        (("pending", 0, "reply"), {"role": "robot"}, "pending[0].reply: Message.role"),
        (("pending", 1, "reply"), "other", "pending[1].reply 'other' names no reply"),
        (("pending",), {}, "pending must be a list"),
        (("agent", "tools"), ["pay", 3], "agent.tools[1] must be a str"),
        (("inputs",), [], "inputs must be an object"),
        (("pending", 0, "approved"), True, "pending[0] has unknown field(s) ['approved']"),
        (("steps",), [None], "steps[0] must be an object"),
    ],
)
def test_a_wrong_field_is_named(path: tuple[Any, ...], value: object, expected: str) -> None:
    data = _paused().to_dict()
    container = data
    for part in path[:-1]:
        container = container[part]
    container[path[-1]] = value
    _refused(data, expected)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("[]", "a run state is a JSON object, got list"),
        ('"state"', "a run state is a JSON object, got str"),
        (b"\xff\xfe{}", "not UTF-8"),
        ("", "not JSON"),
        ('{"format": "chainkit.run_state", "version": 99}', "version 99"),
        ('{"format": "other"}', "not a chainkit run state"),
    ],
)
def test_what_is_no_state_at_all_is_named(given: str | bytes, expected: str) -> None:
    _refused(given, expected)


def test_a_state_reads_back_from_utf8_bytes_and_keeps_a_lone_surrogate() -> None:
    state = _paused()
    assert checkpoints.RunState.from_json(state.to_json().encode("utf-8")) == state
    assert checkpoints.RunState.from_dict(MappingProxyType(state.to_dict())) == state
    state.inputs["input"] = "half a pair: \ud800"  # a model's text can hold one
    assert checkpoints.RunState.from_json(state.to_json(key=KEY), key=KEY) == state


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["same", "paused", "running", "finished", "pay", "call-0"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)


def _paths(value: object, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, member in value.items():
            found += _paths(member, (*path, key))
    elif isinstance(value, list):
        for i, member in enumerate(value):
            found += _paths(member, (*path, i))
    return found


_STATES = {"paused": _paused().to_dict()}


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_any_change_to_a_state_reads_back_or_is_a_state_format_error(data: st.DataObject) -> None:
    state = copy.deepcopy(_STATES["paused"])
    path = data.draw(st.sampled_from(_paths(state)[1:]))
    container = state
    for part in path[:-1]:
        container = container[part]
    if data.draw(st.booleans()) and isinstance(container, dict):
        del container[path[-1]]
    else:
        container[path[-1]] = data.draw(_JSON)
    for attempt in (lambda: checkpoints.RunState.from_dict(state), lambda: _from_text(state)):
        _read_back_or_refused(attempt)


def _from_text(state: dict[str, Any]) -> checkpoints.RunState:
    try:
        text = json.dumps(state)
    except ValueError:
        text = "{}"
    return checkpoints.RunState.from_json(text)


_HOSTILE = ["1e999", "NaN", "-Infinity", "9" * 5000, "[" * 100_000 + "]" * 100_000]
_HOSTILE += ['"\\ud800"', '{"a": 1, "a": 2}', "[]", '"same"', "-1", "true", "{}", "null"]


def _value_spans(text: str) -> list[tuple[int, int]]:
    """Where the values of a state's text start and end (a value after ': ', '[' or ', ')."""
    spans = []
    for start in range(1, len(text)):
        if text[start - 1] in " [" and text[start - 2 : start] != '" ':
            try:
                _, end = json.JSONDecoder().raw_decode(text, start)
            except ValueError:
                continue
            spans.append((start, end))
    return spans


_PAUSED_TEXT = _paused().to_json()
_SPANS = _value_spans(_PAUSED_TEXT)


@st.composite
def _edited_texts(draw: st.DrawFn) -> str:
    """A paused state's text with one of its values replaced by a hostile piece."""
    start, end = draw(st.sampled_from(_SPANS))
    return _PAUSED_TEXT[:start] + draw(st.sampled_from(_HOSTILE)) + _PAUSED_TEXT[end:]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.binary(), _JSON.map(json.dumps), _edited_texts()))
def test_any_text_reads_as_a_state_or_a_state_format_error(text: str | bytes) -> None:
    _read_back_or_refused(lambda: checkpoints.RunState.from_json(text))


def _read_back_or_refused(read: Callable[[], checkpoints.RunState]) -> None:
    """A state read is written and read back the same; anything else is a StateFormatError."""
    try:
        state = read()
    except checkpoints.StateFormatError:
        return
    assert checkpoints.RunState.from_json(state.to_json()) == state


# --- a state cannot grant what nobody granted ---


class AlwaysLooksUp(BaseModel):
    """Calls `lookup` at every step, counting its replies: a run that never finishes."""

    def __init__(self) -> None:
        super().__init__()
        self.replies = 0

    def _generate(self, request: ModelRequest) -> Message:
        self.replies += 1
        call = ToolCall(f"call-{self.replies}", FunctionCall("lookup", '{"name": "ann"}'))
        return Message.assistant("", tool_calls=[call])


def test_a_negative_iteration_cannot_buy_model_calls_past_max_iterations() -> None:
    payments, model = Payments(), AlwaysLooksUp()
    executor = agents.Executor(
        agents.ToolCallingAgent(model, [payments.pay, payments.lookup]), max_iterations=3
    )
    state = _paused().to_dict()
    state.update(status="running", pending=[], iteration=-50)
    with pytest.raises(checkpoints.StateFormatError, match="iteration is -50"):
        chains.resume(executor, json.dumps(state))
    assert model.replies == 0  # it made 53 before


@pytest.mark.parametrize("observed", [None, "paid 900 to bob"])
def test_a_paused_call_marked_started_is_refused(observed: str | None) -> None:
    payments = Payments()
    state = _paused(payments).to_dict()
    state["pending"][0].update(started=True, observation=observed)
    state["pending"][1]["started"] = True
    with pytest.raises(checkpoints.StateFormatError, match="'pay' needs approval and is marked"):
        chains.resume(agents.Executor(tool_calling(payments, *CALLS)), state, interrupted="repeat")
    assert payments.paid == []


@pytest.mark.parametrize("interrupted", ["repeat", "skip", "raise"])
def test_a_run_claimed_to_be_in_an_approved_call_cannot_repeat_it(interrupted: str) -> None:
    """The edit that reads as a crash during an approved payment: status running, the call
    started. Without a state key nothing proves a person approved it, so it is refused."""
    payments = Payments()
    state = _paused(payments).to_dict()
    state["status"] = "running"
    for entry in state["pending"]:
        entry["started"] = True
    with pytest.raises(
        checkpoints.StateFormatError, match="needs approval and is marked decided or started"
    ):
        chains.resume(
            agents.Executor(tool_calling(payments, *CALLS)),
            json.dumps(state),
            interrupted=interrupted,
        )
    assert payments.paid == []


def test_a_paused_call_marked_approved_is_refused() -> None:
    """A decision saved in the state is honoured on resume: a forged one would pay."""
    payments = Payments()
    state = _paused(payments).to_dict()
    for entry in state["pending"]:
        entry["decision"] = {"kind": "approve"}
    with pytest.raises(checkpoints.StateFormatError, match="marked decided or started"):
        chains.resume(agents.Executor(tool_calling(payments, *CALLS)), json.dumps(state))
    assert payments.paid == []


def test_an_added_call_sharing_a_waiting_calls_id_is_refused() -> None:
    """One decision keyed by that id would otherwise approve both."""
    state = _paused().to_dict()
    state["pending"].append({**state["pending"][0], "reply": "same"})
    _refused(state, "share tool_call_id(s) ['call-0']")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"status": "paused", "pending": []}, "a paused run has no call waiting"),
        ({"status": "finished"}, "a finished run has calls in progress"),
        ({"outputs": {"output": "done"}}, "a paused run has outputs"),
        ({"run_id": ""}, "run_id is empty"),
        ({"iteration": 0}, "iteration is 0 but a step is in progress"),
    ],
)
def test_fields_that_contradict_each_other_are_refused(
    change: dict[str, Any], expected: str
) -> None:
    _refused({**_paused().to_dict(), **change}, expected)


# --- a tagged state: any change is refused ---


def test_a_tagged_state_resumes_under_its_key() -> None:
    payments = Payments()
    text = _paused(payments).to_json(key=KEY)
    assert json.loads(text)["tag"].startswith("hmac-sha256:")
    executor = agents.Executor(tool_calling(payments, *CALLS), state_key=KEY)
    decisions = [agents.Deny("no"), agents.Approve()]
    outputs = chains.resume(executor, text, decisions)
    assert payments.paid == [("ann", 9)] and "paid 9 to ann" in outputs["output"]


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s["pending"][1].update(tool_input='{"to": "eve", "amount": 9}'),
        lambda s: s["pending"].append({**s["pending"][1], "tool_call_id": "call-9"}),
        lambda s: s.update(iteration=0),
        lambda s: s["inputs"].update(input="pay eve"),
        lambda s: s.pop("tag"),
    ],
)
def test_any_change_to_a_tagged_state_is_refused(edit: Any) -> None:
    payments = Payments()
    state = json.loads(_paused(payments).to_json(key=KEY))
    edit(state)
    executor = agents.Executor(tool_calling(payments, *CALLS), state_key=KEY)
    with pytest.raises(checkpoints.StateFormatError, match="tag"):
        chains.resume(executor, json.dumps(state), [agents.Approve(), agents.Approve()])
    assert payments.paid == []


def test_a_state_tagged_under_another_key_is_refused() -> None:
    _refused(_paused().to_json(key=b"x" * 32), "does not verify", key=KEY)


def test_a_state_tagged_and_read_without_a_key_is_read_as_any_other() -> None:
    state = _paused()
    assert checkpoints.RunState.from_json(state.to_json(key=KEY)) == state


@pytest.mark.parametrize(
    ("key", "expected"),
    [("secret-secret-secret", r"must be bytes \(encode it"), (b"short", "at least 16 bytes")],
)
def test_a_bad_state_key_is_refused_without_showing_it(key: object, expected: str) -> None:
    for attempt in (
        lambda: _paused().to_json(key=key),  # type: ignore[arg-type]
        lambda: agents.Executor(tool_calling(Payments(), *CALLS), state_key=key),  # type: ignore[arg-type]
    ):
        with pytest.raises(checkpoints.errors.CheckpointConfigError, match=expected) as refused:
            attempt()
        assert str(key) not in str(refused.value)
