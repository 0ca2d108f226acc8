"""What the SQL stores share: the state split into a run's row and one row per step, and
read back."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from chainkit._store import json_text
from chainkit.checkpoints import _lease as leases
from chainkit.checkpoints.errors import (
    CheckpointError,
    RunExistsError,
    RunLockedError,
    RunNotFoundError,
    RunTakenOverError,
    StaleStateError,
    StateFormatError,
)
from chainkit.checkpoints.state import RunState, step_dicts

LIST_RUNS = "SELECT run_id, agent, status, steps, updated FROM chainkit_runs ORDER BY updated DESC"
"""The rows of `Checkpointer.runs`, in the order of RunSummary's fields."""


UPDATE_RUN = """
UPDATE chainkit_runs SET progress = ?, status = ?, steps = ?, updated = ?, version = ?,
    lease_expires = CASE WHEN lease_token IS NULL THEN NULL ELSE ? END
WHERE run_id = ? AND version = ? AND lease_token {same} ?
"""
"""A save of a run's row: only over the version the state was read as, and only by the
holder of its lease (or anyone while no one holds it); renews the lease. `{same}` is the
dialect's NULL-safe equality (SQLite's IS, PostgreSQL's IS NOT DISTINCT FROM)."""
INSERT_RUN = """
INSERT INTO chainkit_runs (run_id, agent, header, progress, status, steps, updated, version)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING
"""
READ_VERSION = "SELECT version, lease_token FROM chainkit_runs WHERE run_id = ?"
READ_RECORD = "SELECT header, progress FROM chainkit_runs WHERE run_id = ?"


class Dialect(NamedTuple):
    """The statements that differ between the databases' SQL."""

    update: str
    """UPDATE_RUN with the dialect's NULL-safe equality."""
    read_lease: str
    """READ_LEASE, locking the row where the dialect locks rows (PostgreSQL)."""


DIALECTS = {
    "sqlite": Dialect(UPDATE_RUN.format(same="IS"), leases.READ_LEASE),
    "postgresql": Dialect(
        UPDATE_RUN.format(same="IS NOT DISTINCT FROM"), leases.READ_LEASE + " FOR UPDATE"
    ),
}


Execute = Callable[[str, tuple[Any, ...]], Any]
"""A connection's `execute`: a statement and its parameters, to a cursor."""


def write_run(
    execute: Execute,
    sql: Dialect,
    state: RunState,
    now: float,
    expires: float,
    held: str | None,
    retry: bool = False,
) -> None:
    """Writes the run's row, inside the store's transaction, over the version the state was
    read as (`state.saved` counts this save already), renewing the hold `held` (this store's
    lease token on the run, if any); raises, naming why, when the record moved on, or is
    held by another store. `retry`: this save was tried already and its COMMIT may have
    happened with the reply lost: then a record this save wrote counts as written."""
    if execute(sql.update, updated_row(state, now, expires, held)).rowcount == 1:
        return
    stored = execute(READ_VERSION, (state.run_id,)).fetchone()
    if stored is None and execute(INSERT_RUN, inserted_row(state, now)).rowcount == 1:
        return
    if retry and stored is not None and _written_by(execute, state, stored, held):
        return
    raise refusal(state, stored or (None, None), held)  # None: another store inserted it


def _written_by(
    execute: Execute, state: RunState, stored: tuple[Any, Any], held: str | None
) -> bool:
    """Whether the record `stored` (READ_VERSION's columns) is this save's: of its version,
    under this store's lease; a run not held here (its first save) only when the record
    holds this very state, as a second writer's would not to the byte."""
    version, token = stored
    if version != state.saved or token != held:
        return False
    if held is not None:  # a token is this store's alone: no one else wrote under it
        return True
    record = execute(READ_RECORD, (state.run_id,)).fetchone()
    return tuple(record) == (json_text(state.header()), json_text(state.progress()))


def updated_row(state: RunState, now: float, expires: float, held: str | None) -> tuple[Any, ...]:
    """UPDATE_RUN's parameters for `state`, whose `saved` counts this save already."""
    saved, steps = state.saved, len(state.steps)
    progress = json_text(state.progress())
    return (progress, state.status, steps, now, saved, expires, state.run_id, saved - 1, held)


def inserted_row(state: RunState, now: float) -> tuple[Any, ...]:
    """INSERT_RUN's parameters for `state`, whose `saved` counts this save already."""
    header, progress = json_text(state.header()), json_text(state.progress())
    run, steps = state.run_id, len(state.steps)
    return (run, state.agent, header, progress, state.status, steps, now, state.saved)


def refusal(state: RunState, row: tuple[Any, Any], held: str | None) -> CheckpointError:
    """Why the store refused to save `state` over its record `row` (READ_VERSION's columns)
    whose version or lease did not match; `held` is this store's lease token on the run."""
    version, token = row
    run = state.run_id
    if state.saved == 1:
        return RunExistsError(
            f"a new run was started as run {run!r}, which the store holds a run of already "
            f"(saved {version} times): nothing ran. Resume it by its id to continue it or to "
            "get its answer, or start the new run under another id"
        )
    if token != held:
        if held is not None:
            return RunTakenOverError(
                f"run {run!r} was taken over by another process after this one's hold on it "
                "expired: this save was refused and the run stops here; it goes on there"
            )
        return RunLockedError(f"run {run!r} is held by another process: this save was refused")
    return StaleStateError(
        f"run {run!r} moved on since this state of it was saved (the state is of save "
        f"{state.saved - 1}, the store's record of save {version}): it was refused, so nothing "
        "is repeated or undone. Resume the run by its id to continue from the store's record"
    )


def step_rows(state: RunState, start: int) -> list[tuple[str, int, str]]:
    """The rows of the steps from `start` on: run_id, seq, step."""
    steps = step_dicts(state.steps, start)
    return [(state.run_id, start + i, json_text(step)) for i, step in enumerate(steps)]


LOAD_RUN = "SELECT header, progress, version FROM chainkit_runs WHERE run_id = ?"


def state_of(
    run_id: str, row: tuple[str, str, int] | None, steps: Iterable[tuple[str]]
) -> RunState:
    """The state from the run's LOAD_RUN row and its steps' rows, in order."""
    if row is None:
        raise RunNotFoundError(f"no run {run_id!r} in the checkpoint store")
    header, progress, version = row
    try:
        data = {**json.loads(header), **json.loads(progress), "saved": version}
        data["steps"] = [json.loads(step) for (step,) in steps]
    except (TypeError, ValueError, RecursionError) as error:
        raise StateFormatError(
            f"run {run_id!r}: its rows in the checkpoint store are not the JSON objects chainkit "
            f"writes ({error}): the database was edited or damaged"
        ) from None
    return RunState.from_dict(data)
