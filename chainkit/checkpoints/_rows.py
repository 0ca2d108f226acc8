"""What the SQL stores share: the state split into a run's row and one row per step, and
read back."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from chainkit.checkpoints.errors import RunNotFoundError, StateFormatError
from chainkit.checkpoints.state import RunState, step_dicts

LIST_RUNS = "SELECT run_id, agent, status, steps, updated FROM chainkit_runs ORDER BY updated DESC"
"""The rows of `Checkpointer.runs`, in the order of RunSummary's fields."""


def run_row(state: RunState, now: float) -> tuple[Any, ...]:
    """The run's row: run_id, agent, header, progress, status, steps, updated."""
    return (
        state.run_id,
        state.agent,
        _json(state.header()),
        _json(state.progress()),
        state.status,
        len(state.steps),
        now,
    )


def step_rows(state: RunState, start: int) -> list[tuple[str, int, str]]:
    """The rows of the steps from `start` on: run_id, seq, step."""
    steps = step_dicts(state.steps, start)
    return [(state.run_id, start + i, _json(step)) for i, step in enumerate(steps)]


def state_of(run_id: str, row: tuple[str, str] | None, steps: Iterable[tuple[str]]) -> RunState:
    """The state from the run's (header, progress) row and its steps' rows, in order."""
    if row is None:
        raise RunNotFoundError(f"no run {run_id!r} in the checkpoint store")
    header, progress = row
    try:
        data = {**json.loads(header), **json.loads(progress)}
        data["steps"] = [json.loads(step) for (step,) in steps]
    except (TypeError, ValueError, RecursionError) as error:
        raise StateFormatError(
            f"run {run_id!r}: its rows in the checkpoint store are not the JSON objects chainkit "
            f"writes ({error}): the database was edited or damaged"
        ) from None
    return RunState.from_dict(data)


def _json(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate (text read with "surrogateescape"): escaped
        return json.dumps(value, separators=(",", ":"))  # it reads back as it was
    return text
