"""Checkpoints: a run's state as versioned JSON, and the stores that keep it after every step
so a run resumes (`chains.resume`) after a crash, in another process or days later.

Every error of this package is in `chainkit.checkpoints.errors`.
"""

from chainkit.checkpoints import errors as errors
from chainkit.checkpoints.errors import (
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
from chainkit.checkpoints.state import RunState
from chainkit.checkpoints.store import Checkpointer, RunSummary, named_run

__all__ = [
    "CheckpointError",
    "Checkpointer",
    "InterruptedCallError",
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
