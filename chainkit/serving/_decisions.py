"""The decisions a client posts to resume a paused run, checked against the calls the run
waits on before anything runs: each named call must be waiting (409 naming the others),
each waiting call must be answered (422 naming those missing), and each decision must be one
(422 naming the call). Decisions are JSON as a run's state keeps them
(`agents.approval.decision_data`): `{"kind": "approve"}`, `{"kind": "deny", "reason"}`,
`{"kind": "edit", "arguments"}`; a tool's question takes any JSON as its answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chainkit._text import short_repr
from chainkit.agents import ApprovalRequest, InputRequest
from chainkit.agents.approval import Decision, decision_from, waiting_key
from chainkit.agents.errors import AgentTypeError
from chainkit.serving._problems import Problem

_DECISION_FIELDS = {"approve": {"kind"}, "deny": {"kind", "reason"}, "edit": {"kind", "arguments"}}


def checked_decisions(
    run_id: str, given: dict[str, Any] | list[Any] | None, waiting: Sequence[Any]
) -> list[Any] | None:
    """The answers to give `chains.aresume`, in the order of the `waiting` requests: a
    Decision for each approval, the JSON given for each question; None when none is waited
    on and none was given."""
    keys = [waiting_key(request, position) for position, request in enumerate(waiting)]
    if given is None:
        if keys:
            raise Problem(
                422,
                "decisions_missing",
                f"run {run_id} waits on calls {_named(keys)}: give decisions for them",
                run_id=run_id,
            )
        return None
    if not keys:
        if given:
            raise Problem(
                409,
                "call_not_waiting",
                f"run {run_id} waits on no call now (it was resumed, or never paused): give "
                "no decisions",
                run_id=run_id,
            )
        return None  # none waited on, none named: as if none were given
    answers = _by_key(run_id, given, keys)
    pairs = zip(keys, waiting, strict=True)
    return [_answer(run_id, key, answers[key], request) for key, request in pairs]


def _by_key(
    run_id: str, given: dict[str, Any] | list[Any], keys: list[str | int]
) -> dict[Any, Any]:
    """The answers given, by each waiting call's key (a dict's keys are text: a MRKL call's
    key, its position, is given as "0")."""
    if isinstance(given, list):
        if len(given) != len(keys):
            raise Problem(
                422,
                "decisions_missing",
                f"decisions as a list need one per waiting call ({len(keys)}: "
                f"{_named(keys)}), got {len(given)}",
                run_id=run_id,
            )
        return dict(zip(keys, given, strict=True))
    named = {str(key): key for key in keys}
    unknown = [name for name in given if name not in named]
    if unknown:
        raise Problem(
            409,
            "call_not_waiting",
            f"run {run_id} has no waiting call {_named(unknown)}; it waits on {_named(keys)}",
            run_id=run_id,
        )
    missing = [key for key in keys if str(key) not in given]
    if missing:
        raise Problem(
            422,
            "decisions_missing",
            f"run {run_id} waits on calls {_named(missing)} too: give decisions for them",
            run_id=run_id,
        )
    return {named[name]: value for name, value in given.items()}


def _answer(
    run_id: str, key: str | int, value: Any, request: ApprovalRequest | InputRequest
) -> Any:
    if isinstance(request, InputRequest):
        return value
    return _decision(run_id, key, value)


def _decision(run_id: str, key: str | int, value: Any) -> Decision:
    kind = value.get("kind") if isinstance(value, dict) else None
    fields = _DECISION_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None or not isinstance(value, dict):
        raise _invalid(run_id, key, 'a decision is {"kind": "approve" | "deny" | "edit", ...}')
    unknown = sorted(set(value) - fields)
    if unknown:
        raise _invalid(run_id, key, f"a {kind} decision has no field {unknown[0]!r}")
    if kind == "edit" and not isinstance(value.get("arguments"), dict | str):
        raise _invalid(run_id, key, "an edit's arguments are an object (or text)")
    if kind == "deny" and not isinstance(value.get("reason", ""), str):
        raise _invalid(run_id, key, "a denial's reason is text")
    try:
        return decision_from(value)
    except AgentTypeError as refused:
        raise _invalid(run_id, key, str(refused)) from None


def _invalid(run_id: str, key: str | int, why: str) -> Problem:
    return Problem(
        422,
        "invalid_decision",
        f"the decision for call {short_repr(key, 80)} is not one: {why}",
        run_id=run_id,
    )


_NAMED = 5
"""How many calls a refusal names (a client may send thousands)."""


def _named(keys: Sequence[object]) -> str:
    names = [short_repr(key, 80) for key in keys[:_NAMED]]
    more = f" and {len(keys) - _NAMED} more" if len(keys) > _NAMED else ""
    return ", ".join(names) + more
