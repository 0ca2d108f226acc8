"""The traces of a server's last runs, kept in memory for the trace page of a run
(`GET /runs/{run_id}/trace`): each run's events under its run id, made the lines a
`callbacks.TraceFile` writes (plain JSON, keys masked) only when the page asks for them; a
resumed run's events join its earlier ones.

The events are kept, not their lines: a run's events are many and its page is asked for
rarely, so making each event plain and JSON as it happens would cost every run for nothing.
What an event holds may be changed in place after it is heard (a structured call's message
list grows with each rejection, a caller's inputs may be reused), so its data's dicts and
lists are copied when it is kept; the values in them (messages, actions, errors) are not
changed once made.

Bounded: the last `ServerSettings.traces_kept` runs (64 by default; 0 records nothing), and
at most `EVENTS_PER_RUN` events each (the rest of a longer run is dropped, and the page says
the trace is cut short); a run's streamed tokens are kept as the time of its first one,
without their text, which is all the page shows; an error's message is withheld, as from
the run's stream (the page is a client's too): its type is shown. The traces are the
process's own: a run served by another worker, or before a restart, has none here (its
state, `GET /runs/{run_id}`, is in the checkpointer for every worker)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chainkit.callbacks import Event, EventHandler
from chainkit.callbacks.trace_file import event_line
from chainkit.serving._outputs import withheld

if TYPE_CHECKING:
    from starlette.requests import Request

EVENTS_PER_RUN = 2000


@dataclass(slots=True)
class RunTrace:
    """One run's events so far."""

    events: list[Event] = field(default_factory=list)
    cut_short: bool = False
    first_tokens: set[str] = field(default_factory=set)
    """The model runs whose first token is kept."""


class RunTraces:
    """The traces of the last runs, by run id; safe to add to from any thread."""

    def __init__(self, runs_kept: int, events_per_run: int = EVENTS_PER_RUN) -> None:
        self._runs_kept = runs_kept
        self._events_per_run = events_per_run
        self._traces: OrderedDict[str, RunTrace] = OrderedDict()
        self._lock = threading.Lock()

    def recorder(self, run_id: str) -> EventHandler | None:
        """A handler that adds the events it hears to run `run_id`'s trace (made the newest,
        the oldest kept forgotten if there are too many); None when none are kept: a run
        with no handler costs nothing."""
        if not self._runs_kept:
            return None
        with self._lock:
            trace = self._traces.pop(run_id, None) or RunTrace()
            self._traces[run_id] = trace
            while len(self._traces) > self._runs_kept:
                self._traces.popitem(last=False)
        return _Recorder(self, trace, run_id)

    def lines(self, run_id: str) -> tuple[list[str], bool] | None:
        """Run `run_id`'s trace lines and whether they were cut short; None when none is kept.
        Made from its events here: call it off the event loop."""
        with self._lock:
            trace = self._traces.get(run_id)
            if trace is None:
                return None
            events, cut_short = list(trace.events), trace.cut_short
        return [event_line(event) for event in events], cut_short

    def add(self, trace: RunTrace, event: Event, run_id: str) -> None:
        if event.kind == "token":
            if event.run_id in trace.first_tokens:
                return
            trace.first_tokens.add(event.run_id)
            data: dict[str, Any] = {"text": ""}
        else:
            copies: dict[int, Any] = {}
            data = {key: _copied(value, copies) for key, value in event.data.items()}
            if event.kind.endswith("_error") and "error" in data:
                data["error"] = _Withheld(type(data["error"]).__name__, withheld(run_id))
        kept = Event(
            event.kind, event.run_id, event.parent_id, event.run_kind, event.name, data, event.time
        )
        with self._lock:
            if trace.cut_short or len(trace.events) >= self._events_per_run:
                trace.cut_short = True
                return
            trace.events.append(kept)


@dataclass(frozen=True, slots=True)
class _Withheld:
    """An error as its trace line shows it: `{"type", "message"}`, as an exception's."""

    type: str
    message: str


def _copied(value: Any, copies: dict[int, Any], depth: int = 0) -> Any:
    """`value` with its dicts and lists copied (`copies` by the id of each original, so that
    a container held twice, or inside itself, is so in the copy); any other value, or one
    nested deeper than an event's line shows, as it is."""
    kind = type(value)
    if (kind is not dict and kind is not list) or depth > _DEEPEST_COPIED:
        return value
    copy = copies.get(id(value))
    if copy is not None:
        return copy
    if kind is dict:
        copy = copies[id(value)] = {}
        for key, item in value.items():
            copy[key] = _copied(item, copies, depth + 1)
    else:
        copy = copies[id(value)] = []
        copy.extend(_copied(item, copies, depth + 1) for item in value)
    return copy


_DEEPEST_COPIED = 70
"""Past the nesting a trace line keeps (64), a value is written as its repr."""


class _Recorder(EventHandler):
    def __init__(self, traces: RunTraces, trace: RunTrace, run_id: str) -> None:
        self._traces = traces
        self._trace = trace
        self._run_id = run_id

    def on_event(self, event: Event) -> None:
        self._traces.add(self._trace, event, self._run_id)


def traced(request: Request, run_id: str) -> EventHandler | None:
    """The handler recording run `run_id`'s events for the app serving `request`."""
    traces: RunTraces = request.app.state.traces
    return traces.recorder(run_id)
