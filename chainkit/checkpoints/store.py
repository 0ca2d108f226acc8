"""The contract of a checkpoint store, for stores of your own: save a run's state atomically,
load it back, list the runs, and hold a run so that one process at a time continues it."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from chainkit.checkpoints.state import RunState


@dataclass(frozen=True, slots=True)
class RunSummary:
    """A run as `Checkpointer.runs` lists it."""

    run_id: str
    agent: str
    status: str
    steps: int
    updated: float
    """When its state was last saved (seconds since the epoch)."""


@runtime_checkable
class Checkpointer(Protocol):
    """Where an Executor keeps its runs' states.

    - `save(state)` replaces the run's stored state with `state`, atomically: a reader (or a
      process started after a crash) sees the old state or the new one, never a mix. It
      writes only over the record `state` was read as (`state.saved` counts the record's
      saves; it counts this one once written): a state older than the record raises
      StaleStateError, a new state (`saved` 0) under an id the store holds RunExistsError,
      and a save of a run another store holds RunLockedError, or RunTakenOverError once
      another store took over a run this one held. Each save renews this store's hold.
    - `load(run_id)` returns the last state saved; raises RunNotFoundError.
    - `runs()` lists the runs, most recently saved first.
    - `acquire(run_id)` holds the run for this store object until `release(run_id)`; raises
      RunLockedError while another process, thread or store holds it. A hold ends with the
      process that took it (a crash releases it), or when it expires unsaved.
    """

    def save(self, state: RunState) -> None: ...

    def load(self, run_id: str) -> RunState: ...

    def runs(self) -> list[RunSummary]: ...

    def acquire(self, run_id: str) -> None: ...

    def release(self, run_id: str) -> None: ...


_RUN_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("run_id", default=None)


@contextmanager
def named_run(run_id: str) -> Iterator[None]:
    """Gives the Executor run started inside it this id (the default is a fresh uuid4), so
    the caller can resume it by name: `with checkpoints.named_run("order-42"): ...`."""
    token = _RUN_ID.set(run_id)
    try:
        yield
    finally:
        _RUN_ID.reset(token)


def new_run_id() -> str:
    """The id of a run starting now: the one `named_run` gives, else a fresh one."""
    named = _RUN_ID.get()
    if named:
        return named
    import uuid  # loaded by the first checkpointed run, not with the agents

    return uuid.uuid4().hex
