"""The traces of a server's last runs, kept in memory for the trace page of a run
(`GET /runs/{run_id}/trace`): each run's events as the lines a `callbacks.TraceFile` writes
(plain JSON, keys masked), under its run id; a resumed run's events join its earlier ones.

Bounded: the last `ServerSettings.traces_kept` runs (64 by default; 0 records nothing), and
at most `CHARS_PER_RUN` characters of lines each (the rest of a longer run is dropped, and the
page says the trace is cut short); a run's streamed tokens are kept as the time of its first
one, without their text, which is all the page shows. The traces are the process's own: a run
served by another worker, or before a restart, has none here (its state, `GET
/runs/{run_id}`, is in the checkpointer for every worker)."""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from chainkit.callbacks import Event, EventHandler
from chainkit.callbacks.trace_file import event_line

if TYPE_CHECKING:
    from starlette.requests import Request

CHARS_PER_RUN = 1024 * 1024


@dataclass(slots=True)
class RunTrace:
    """One run's trace lines so far."""

    lines: list[str] = field(default_factory=list)
    size: int = 0
    cut_short: bool = False
    first_tokens: set[str] = field(default_factory=set)
    """The model runs whose first token is kept."""


class RunTraces:
    """The traces of the last runs, by run id; safe to add to from any thread."""

    def __init__(self, runs_kept: int, chars_per_run: int = CHARS_PER_RUN) -> None:
        self._runs_kept = runs_kept
        self._chars_per_run = chars_per_run
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
        return _Recorder(self, trace)

    def lines(self, run_id: str) -> tuple[list[str], bool] | None:
        """Run `run_id`'s trace lines and whether they were cut short; None when none is kept."""
        with self._lock:
            trace = self._traces.get(run_id)
            return None if trace is None else (list(trace.lines), trace.cut_short)

    def add(self, trace: RunTrace, event: Event) -> None:
        if event.kind == "token":
            if event.run_id in trace.first_tokens:
                return
            trace.first_tokens.add(event.run_id)
            event = dataclasses.replace(event, data={"text": ""})
        line = event_line(event)
        with self._lock:
            if trace.cut_short or trace.size + len(line) > self._chars_per_run:
                trace.cut_short = True
                return
            trace.lines.append(line)
            trace.size += len(line)


class _Recorder(EventHandler):
    def __init__(self, traces: RunTraces, trace: RunTrace) -> None:
        self._traces = traces
        self._trace = trace

    def on_event(self, event: Event) -> None:
        self._traces.add(self._trace, event)


def traced(request: Request, run_id: str) -> EventHandler | None:
    """The handler recording run `run_id`'s events for the app serving `request`."""
    traces: RunTraces = request.app.state.traces
    return traces.recorder(run_id)
