"""Errors of checkpoints: a run that cannot be found, taken, read or resumed as asked.

StoreError and StoreUnavailableError (a database refusing, or out of reach) are every
store's: defined in `chainkit._errors`, exported here as well."""

from __future__ import annotations

from chainkit._errors import ChainkitError
from chainkit._errors import StoreError as StoreError
from chainkit._errors import StoreUnavailableError as StoreUnavailableError
from chainkit._text import quoted


class CheckpointError(ChainkitError):
    """Base of the checkpoint errors: a run that cannot be saved, found, held or resumed."""


class CheckpointConfigError(CheckpointError, ValueError):
    """A store or resume option out of range, or a store that is not a Checkpointer."""


class RunNotFoundError(CheckpointError, LookupError):
    """No run of that id is in the store."""


class RunLockedError(CheckpointError, RuntimeError):
    """Another process (or thread) holds the run: it is running or being resumed there."""


class RunTakenOverError(CheckpointError, RuntimeError):
    """This store's hold on the run ended (it expired, and another process took the run over):
    its save was refused, so two processes never both continue one run. The run goes on
    where it was taken over; this process stops it here."""


class RunExistsError(CheckpointError, ValueError):
    """A new run was started under an id the store holds a run of already (a message
    delivered twice, a double click): nothing ran. Resume that run by its id to continue it
    or get its answer, or start this one under another id."""


class StaleStateError(CheckpointError, RuntimeError):
    """A state older than the store's record of its run (a JSON state resumed again, or a
    state another process moved on): saving it would repeat or undo what the run did since,
    so it was refused and nothing ran. Resume the run by its id, from the store's record."""


class RunFinishedError(CheckpointError, RuntimeError):
    """The run ended with a final answer already: there is nothing to resume."""


class StateFormatError(CheckpointError, ValueError):
    """A run state that is not the JSON this version of chainkit writes: another format or
    version, or a field missing or of the wrong type."""


class StateMismatchError(CheckpointError, ValueError):
    """A run state the executor cannot continue: another agent kind, or a tool it needs that
    the executor's agent lacks."""


class InterruptedCallError(CheckpointError, RuntimeError):
    """A tool call was started but not completed when the run stopped, and its tool is not
    idempotent: repeating it might do its work twice. `tool`, `tool_call_id` and `tool_input`
    name the call; resume with `interrupted="repeat"` or `interrupted="skip"` to decide."""

    def __init__(self, run_id: str, tool: str, tool_call_id: str | None, tool_input: str) -> None:
        call = f" (call id {tool_call_id})" if tool_call_id else ""
        super().__init__(
            f"run {run_id}: the call to tool {tool!r}{call} with input "
            f"{quoted(tool_input, 200)} started but did not complete before the run stopped; "
            f"{tool!r} is not idempotent, so it was not repeated. Resume with "
            "interrupted='repeat' to call it again, or interrupted='skip' to tell the model "
            "its outcome is unknown"
        )
        self.run_id = run_id
        self.tool = tool
        self.tool_call_id = tool_call_id
        self.tool_input = tool_input
