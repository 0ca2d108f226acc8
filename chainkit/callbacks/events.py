"""Events: each handler call as one record of its run, for consumers that want a stream of
records rather than one method per kind (a trace file, `chains.stream`, OpenTelemetry).

`EVENTS` is the table of every callback event (see `CallbackEvent`): code that treats events by
their phase or run kind, as the executor does for a step it abandons, reads it here."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chainkit._plain import plain
from chainkit._redact import mask_secret_fields
from chainkit.callbacks._events_table import (
    EVENTS,
    CallbackEvent,
    EventKind,
    Phase,
    RunKind,
    ending,
    event_kinds,
    handler_methods,
)
from chainkit.callbacks.handler import Handler
from chainkit.callbacks.run import current_run
from chainkit.schema import Message

__all__ = [
    "END_KINDS",
    "ERROR_KINDS",
    "EVENTS",
    "START_KINDS",
    "CallbackEvent",
    "Event",
    "EventHandler",
    "EventKind",
    "Phase",
    "ending",
    "handler_methods",
]

START_KINDS = event_kinds("start")
END_KINDS = event_kinds("end")
ERROR_KINDS = event_kinds("error")


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened in a run.

    `run_id`, `parent_id`, `run_kind` and `name` are those of the run the event belongs to (a
    token or an agent action belongs to the model or chain run that produced it); `time` is in
    seconds since the epoch. `data` by kind:

    - chain_start `{"inputs"}`, chain_end `{"outputs"}`
    - llm_start `{"messages", "options", "model", "provider"}`; token `{"text"}`: `text` is
      one streamed piece of the reply (a str), in the model's run (run_kind
      "llm"), in the order the model wrote them: a run's pieces joined are its reply's text,
      but for those a `retry` of the run discards; llm_end `{"message"}` (the reply, with
      its usage in `response_meta`),
      partial_object `{"value"}` (what a streamed typed result of `llms.generate_object`,
      or the parser right after the model in a pipeline, holds so far, as JSON data; one
      each time it grows, a long list's every few chunks)
    - tool_start `{"input", "tool_call_id"}`, tool_end `{"output", "tool_call_id"}`,
      tool_error `{"error", "tool_call_id"}`: the id of the model's tool call the tool run
      carries out, as its agent_action's `tool_call_id` (None for an action parsed from text,
      as a OneShotAgent's)
    - retriever_start `{"query"}`, retriever_end `{"query", "documents"}`
    - agent_action `{"action"}`, agent_finish `{"finish"}`
    - every other *_error `{"error"}`: the exception
    - retry `{"attempt", "error", "wait", "discarded"}`: attempt number `attempt` of the model
      call failed with the exception `error`, the next starts in `wait` seconds, and the
      `token`s this run streamed before (their text is `discarded`) are no part of its reply:
      the next attempt streams it again from its start
    - approval_required `{"tool", "arguments", "tool_call_id"}`: a call waits for a person's
      decision (`arguments`: its input as the model wrote it); approval_decided `{"tool",
      "decision", "reason", "arguments", "tool_call_id"}`: "approve", "deny" with its `reason`
      or "edit" with the new `arguments`. Both belong to the tool's run
    - citations `{"cited", "invented"}`: the ids an answer chain's answer cites that name a
      document the model was shown, and those that name none (invented); both empty for an
      answer that cites nothing. It belongs to the answer chain's run
    """

    kind: EventKind
    run_id: str
    parent_id: str | None
    run_kind: RunKind
    name: str
    data: Mapping[str, Any]
    time: float

    def to_dict(self) -> dict[str, Any]:
        """The event as plain JSON data, API keys masked: what a trace file line holds, and
        what `json.dumps` takes as it is. `{"kind", "run_id", "parent_id", "run_kind",
        "name", "time", "data"}`, `data` with the keys above, its values made plain: a
        message as its wire shape (`Message.to_dict()`), an action, a finish or any other
        dataclass as its fields, an error as `{"type", "message"}`, a set as a list, a date
        in ISO 8601, a non-finite float as its str, anything else of no JSON type as its
        repr; an llm_start's options without its `streaming_func` and `callbacks`.
        """
        data = dict(self.data)
        if "options" in data:
            data["options"] = {k: v for k, v in data["options"].items() if k not in _NOT_RECORDED}
        record: dict[str, Any] = plain(
            {
                "kind": self.kind,
                "run_id": self.run_id,
                "parent_id": self.parent_id,
                "run_kind": self.run_kind,
                "name": self.name,
                "time": self.time,
                "data": data,
            }
        )
        # Masked once plain: fields of dataclasses too, and no cycle is left to follow.
        record["data"] = mask_secret_fields(record["data"])
        return record


_NOT_RECORDED = frozenset(("streaming_func", "callbacks"))
"""Options that are no setting of the model call: they are left out of `to_dict`."""


class EventHandler(Handler):
    """Turns every handler call into an `Event` passed to `on_event`; subclasses override it.

    Events heard outside any run (a model called on its own with `callbacks=`) have no run to
    belong to and are dropped: every model, chain and tool call is a run, so none is lost.
    """

    def on_event(self, event: Event) -> None:
        """Receives each event, in the thread that reported it."""

    def _emit(self, kind: EventKind, data: Mapping[str, Any]) -> None:
        run = current_run()
        if run is not None:
            self.on_event(Event(kind, run.id, run.parent_id, run.kind, run.name, data, time.time()))

    def handle_llm_start(self, messages: Sequence[Message], options: Mapping[str, Any]) -> None:
        run = current_run()
        model = options.get("model") or (run.name if run is not None else "")
        provider = getattr(options, "provider", None)
        self._emit(
            "llm_start",
            {"messages": messages, "options": options, "model": model, "provider": provider},
        )


def _emitting(event: CallbackEvent, kind: EventKind) -> Callable[..., None]:
    """The EventHandler method for `event`: its record of kind `kind`, with the arguments the
    table names as its data."""
    fields = tuple((key, event.arguments.index(argument)) for key, argument in event.data.items())

    def emit(self: EventHandler, *arguments: Any) -> None:
        self._emit(kind, {key: arguments[index] for key, index in fields})

    emit.__name__ = event.method
    emit.__qualname__ = f"EventHandler.{event.method}"
    emit.__doc__ = f"Passes a {kind!r} Event to `on_event`."
    return emit


def _add_emitters() -> None:
    """Gives EventHandler a method for each event of the table that makes a record, but for
    those it defines itself."""
    for event in EVENTS:
        if event.kind is not None and event.method not in vars(EventHandler):
            setattr(EventHandler, event.method, _emitting(event, event.kind))


_add_emitters()
