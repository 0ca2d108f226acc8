"""Asking a person from inside a tool: `interrupt(question)` pauses the run, which returns an
`agents.InputRequest` among its waiting requests; `chains.resume(executor, state, answers)`
continues it, and the tool, called again from its start, gets the answer as what
`interrupt` returns. Approval pauses and resumes the same way (`agents.PendingApproval`).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from chainkit.agents.errors import AgentConfigError, AgentTypeError


@dataclass(frozen=True, slots=True)
class InputRequest:
    """A tool's question, waiting for a person's answer: `question` as the tool asked it (any
    JSON value: text, or a dict naming choices or the value missing), `tool` the tool's name,
    `tool_call_id` the model's id of the call (None for a MRKL action), `run_id` the
    Executor's run and `step` its step (from 1)."""

    question: Any
    tool: str
    tool_call_id: str | None
    run_id: str | None
    step: int


class Asked(BaseException):  # a pause, not an error: no `except Exception` takes it
    """Raised by `interrupt` to pause the tool's run until `question` is answered."""

    def __init__(self, question: Any) -> None:
        super().__init__(question)
        self.question = question


@dataclass(slots=True)
class _Answers:
    given: list[Any]
    used: int = 0


_ANSWERS: contextvars.ContextVar[_Answers | None] = contextvars.ContextVar(
    "interrupt_answers", default=None
)


def interrupt(question: Any) -> Any:
    """Asks a person `question` (JSON: text, or a dict naming choices or the missing value)
    from inside a tool of an Executor's run, and returns their answer.

    The first time, the run pauses here: its outputs' "pending" holds an
    `agents.InputRequest` with the question. `chains.resume(executor, state, answers)`, with
    the answer keyed by the call's `tool_call_id` (or position), calls the tool again from its
    start, and this call returns the answer: work the tool did before asking is done again,
    so ask before any side effect. A tool asking several questions gets each answer in
    turn. The run must keep its state: give the Executor a checkpointer (or mark a tool
    `requires_approval`, whose paused runs keep theirs)."""
    try:
        json.dumps(question)
    except (TypeError, ValueError) as error:
        raise AgentTypeError(f"interrupt(question) takes JSON data: {error}") from None
    answers = _ANSWERS.get()
    if answers is None:
        raise AgentConfigError(
            "agents.interrupt() pauses the run to ask a person, so it works only in a tool "
            "run by an Executor that keeps its runs' states: give it a checkpointer"
        )
    if answers.used < len(answers.given):
        answers.used += 1
        return answers.given[answers.used - 1]
    raise Asked(question)


@contextmanager
def answering(given: list[Any]) -> Iterator[None]:
    """The answers a call's `interrupt`s return, in order, inside the block."""
    token = _ANSWERS.set(_Answers(given))
    try:
        yield
    finally:
        _ANSWERS.reset(token)
