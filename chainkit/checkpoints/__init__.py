"""Checkpoints: a run's state as versioned JSON, and the stores that keep it after every step
so a run resumes (`chains.resume`) after a crash, in another process or days later."""

from chainkit.checkpoints.errors import (
    CheckpointConfigError,
    CheckpointError,
    InterruptedCallError,
    RunExistsError,
    RunFinishedError,
    RunLockedError,
    RunNotFoundError,
    RunTakenOverError,
    StaleStateError,
    StateFormatError,
    StateMismatchError,
    StoreError,
    StoreUnavailableError,
)
from chainkit.checkpoints.postgres import PostgresStore
from chainkit.checkpoints.sqlite import SQLiteStore
from chainkit.checkpoints.state import PendingCall, RunState
from chainkit.checkpoints.store import Checkpointer, RunSummary, named_run

__all__ = [
    "CheckpointConfigError",
    "CheckpointError",
    "Checkpointer",
    "InterruptedCallError",
    "PendingCall",
    "PostgresStore",
    "RunExistsError",
    "RunFinishedError",
    "RunLockedError",
    "RunNotFoundError",
    "RunState",
    "RunSummary",
    "RunTakenOverError",
    "SQLiteStore",
    "StaleStateError",
    "StateFormatError",
    "StateMismatchError",
    "StoreError",
    "StoreUnavailableError",
    "named_run",
]
