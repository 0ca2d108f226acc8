"""The callback events, each once: the one place to add an event.

A row names the `Handler` method that hears the event, the kind of run it is about, its phase
in that run, and the method's arguments; for an event that also becomes an `Event` record, the
record's kind and which arguments its `data` holds. The combining handler, the event adapter,
the start/end/error sets, a run's endings and the executor's step events are read off this
table or checked against it (tests/callbacks/test_events_table.py). A new event is its row
here and its no-op method on `Handler`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

RunKind = Literal["chain", "llm", "tool", "retriever"]

EventKind = Literal[
    "chain_start",
    "chain_end",
    "chain_error",
    "llm_start",
    "token",
    "llm_end",
    "llm_error",
    "agent_action",
    "tool_start",
    "tool_end",
    "tool_error",
    "agent_finish",
    "retriever_start",
    "retriever_end",
    "retriever_error",
    "retry",
    "partial_object",
    "approval_required",
    "approval_decided",
    "citations",
]
"""The kinds of `Event` record; each is the `kind` of one row of `EVENTS`."""

Phase = Literal["start", "end", "error", "other"]
"""Where an event stands in its run: it starts it, ends it, reports its failure (each run that
started gets exactly one end or error), or happens within it."""


@dataclass(frozen=True, slots=True)
class CallbackEvent:
    """One event: `method` (the Handler method that hears it), `run_kind` (the kind of run it
    is about; None for one heard in any run), `phase` and `arguments` (the method's, in order).

    `run_name` is the argument that holds the run's name, if one does, and `call_id` the one
    that holds the id of the tool call the run carries out (a tool run's `tool_call_id`).
    `kind` is the event's kind as an `Event` record (None: it makes none), and `data` maps each
    key of that record's `data` to the argument it holds.
    """

    method: str
    run_kind: RunKind | None
    phase: Phase
    arguments: tuple[str, ...]
    run_name: str | None = None
    kind: EventKind | None = None
    data: Mapping[str, str] = field(default_factory=dict)
    call_id: str | None = None

    def reported(
        self, run_name: str, value: object, call_id: str | None = None
    ) -> tuple[object, ...]:
        """The arguments that report `value` (a result or an error) for the run `run_name`,
        which carries out the tool call `call_id`, if any."""
        if self.run_name is None:
            return (value,)
        return (run_name, value) if self.call_id is None else (run_name, value, call_id)


EVENTS: tuple[CallbackEvent, ...] = (
    CallbackEvent("handle_text", None, "other", ("text",)),
    CallbackEvent(
        "handle_llm_start",
        "llm",
        "start",
        ("messages", "options"),
        kind="llm_start",
        # The adapter adds "model" and "provider", read off the options and the run.
        data={"messages": "messages", "options": "options"},
    ),
    CallbackEvent(
        "handle_llm_end", "llm", "end", ("message",), kind="llm_end", data={"message": "message"}
    ),
    CallbackEvent(
        "handle_llm_error", "llm", "error", ("error",), kind="llm_error", data={"error": "error"}
    ),
    CallbackEvent(
        "handle_chain_start",
        "chain",
        "start",
        ("chain", "inputs"),
        run_name="chain",
        kind="chain_start",
        data={"inputs": "inputs"},
    ),
    CallbackEvent(
        "handle_chain_end",
        "chain",
        "end",
        ("chain", "outputs"),
        run_name="chain",
        kind="chain_end",
        data={"outputs": "outputs"},
    ),
    CallbackEvent(
        "handle_chain_error",
        "chain",
        "error",
        ("chain", "error"),
        run_name="chain",
        kind="chain_error",
        data={"error": "error"},
    ),
    CallbackEvent(
        "handle_tool_start",
        "tool",
        "start",
        ("tool", "input", "tool_call_id"),
        run_name="tool",
        kind="tool_start",
        data={"input": "input", "tool_call_id": "tool_call_id"},
        call_id="tool_call_id",
    ),
    CallbackEvent(
        "handle_tool_end",
        "tool",
        "end",
        ("tool", "output", "tool_call_id"),
        run_name="tool",
        kind="tool_end",
        data={"output": "output", "tool_call_id": "tool_call_id"},
        call_id="tool_call_id",
    ),
    CallbackEvent(
        "handle_tool_error",
        "tool",
        "error",
        ("tool", "error", "tool_call_id"),
        run_name="tool",
        kind="tool_error",
        data={"error": "error", "tool_call_id": "tool_call_id"},
        call_id="tool_call_id",
    ),
    CallbackEvent(
        "handle_agent_action",
        "chain",
        "other",
        ("action",),
        kind="agent_action",
        data={"action": "action"},
    ),
    CallbackEvent(
        "handle_agent_finish",
        "chain",
        "other",
        ("finish",),
        kind="agent_finish",
        data={"finish": "finish"},
    ),
    CallbackEvent(
        "handle_retriever_start",
        "retriever",
        "start",
        ("query",),
        run_name="query",
        kind="retriever_start",
        data={"query": "query"},
    ),
    CallbackEvent(
        "handle_retriever_end",
        "retriever",
        "end",
        ("query", "documents"),
        run_name="query",
        kind="retriever_end",
        data={"query": "query", "documents": "documents"},
    ),
    CallbackEvent(
        "handle_retriever_error",
        "retriever",
        "error",
        ("query", "error"),
        run_name="query",
        kind="retriever_error",
        data={"error": "error"},
    ),
    CallbackEvent(
        "handle_streaming_func", "llm", "other", ("chunk",), kind="token", data={"text": "chunk"}
    ),
    CallbackEvent(
        "handle_partial_object",
        "llm",
        "other",
        ("value",),
        kind="partial_object",
        data={"value": "value"},
    ),
    CallbackEvent(
        "handle_retry",
        None,
        "other",
        ("attempt", "error", "wait_seconds", "discarded"),
        kind="retry",
        data={
            "attempt": "attempt",
            "error": "error",
            "wait": "wait_seconds",
            "discarded": "discarded",
        },
    ),
    CallbackEvent(
        "handle_approval_required",
        "tool",
        "other",
        ("tool", "arguments", "tool_call_id"),
        kind="approval_required",
        data={"tool": "tool", "arguments": "arguments", "tool_call_id": "tool_call_id"},
    ),
    CallbackEvent(
        "handle_approval_decided",
        "tool",
        "other",
        ("tool", "decision", "reason", "arguments", "tool_call_id"),
        kind="approval_decided",
        data={
            "tool": "tool",
            "decision": "decision",
            "reason": "reason",
            "arguments": "arguments",
            "tool_call_id": "tool_call_id",
        },
    ),
    CallbackEvent(
        "handle_citations",
        "chain",
        "other",
        ("cited", "invented"),
        kind="citations",
        data={"cited": "cited", "invented": "invented"},
    ),
)


def handler_methods(*phases: Phase) -> frozenset[str]:
    """The handler methods of the events in these phases."""
    return frozenset(event.method for event in EVENTS if event.phase in phases)


def event_kinds(*phases: Phase) -> frozenset[EventKind]:
    """The `Event` kinds of the events in these phases."""
    return frozenset(event.kind for event in EVENTS if event.phase in phases and event.kind)


def ending(run_kind: RunKind, phase: Literal["end", "error"]) -> CallbackEvent:
    """The event that reports the end, or the error, of a run of `run_kind`."""
    [event] = [e for e in EVENTS if e.run_kind == run_kind and e.phase == phase]
    return event
