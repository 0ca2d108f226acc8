"""StepEvents: the handlers of work that may be abandoned before it returns.

A sync run cannot stop a call in progress: the executor at a deadline, and `chains.stream`
when its reader leaves, stop waiting for it instead. Both abandon the call's events here, so
every run it started still gets exactly one end, at once, and nothing is heard from it after.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from chainkit.callbacks.combining import CombiningHandler, guard
from chainkit.callbacks.events import ending, handler_methods
from chainkit.callbacks.run import RunInfo, current_run, reporting_for


class StepEvents(CombiningHandler):
    """The handlers of work running in other threads (an agent's step, a streamed run), until
    the work is abandoned.

    Then each run whose start was reported and whose end was not (a model or tool call, or a
    chain or retrieval inside one) gets an error event at once (reported as that run's, so
    `current_run()` is right), and whatever the abandoned threads report later is dropped:
    every start is answered exactly once, and nothing is heard from a run after it ended.
    With `stop_with`, an abandoned thread reporting anything but an error is stopped there by
    the exception it makes.

    Kept whole where handlers are combined (`guard`, `join`): the runs inside it hear their
    handlers through it, so its abandonment silences them too.
    """

    kept_whole = True

    def __init__(
        self,
        *handlers: CombiningHandler | None,
        stop_with: Callable[[], BaseException] | None = None,
    ) -> None:
        combined = guard(*handlers)
        super().__init__(combined.handlers if combined is not None else [])
        self._lock = threading.Lock()
        self.abandoned = False
        self._open: dict[str, RunInfo] = {}
        self._stop_with = stop_with

    def _dispatch(self, event: str, *args: Any) -> None:
        run = current_run()
        if event in _START_EVENTS:
            # Reported under the lock, so an error for an open run never comes before it.
            with self._lock:
                if self.abandoned:
                    return self._dropped(event)
                if run is not None:
                    self._open[run.id] = run
                super()._dispatch(event, *args)
            return
        with self._lock:
            if self.abandoned:
                return self._dropped(event)
            if event in _END_EVENTS and run is not None:
                self._open.pop(run.id, None)
        super()._dispatch(event, *args)

    def _dropped(self, event: str) -> None:
        if self._stop_with is not None and event not in _ERROR_EVENTS:
            raise self._stop_with()

    def abandon(self, error: BaseException) -> None:
        """Reports `error` for each run still open, then drops every later event."""
        with self._lock:
            if self.abandoned:
                return
            self.abandoned = True
            still_open = list(self._open.values())
        for run in reversed(still_open):  # the innermost first: a run starts after its parent
            failure = ending(run.kind, "error")
            with reporting_for(run):
                super()._dispatch(
                    failure.method, *failure.reported(run.name, error, run.tool_call_id)
                )

    def relay(self, streaming_func: Callable[[str], None]) -> Callable[[str], None]:
        """`streaming_func`, silenced once the step is abandoned."""

        def relayed(chunk: str) -> None:
            if not self.abandoned:
                streaming_func(chunk)

        return relayed


_START_EVENTS = handler_methods("start")
_END_EVENTS = handler_methods("end", "error")
_ERROR_EVENTS = handler_methods("error")
