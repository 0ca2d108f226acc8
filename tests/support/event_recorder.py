"""One recording handler for the tests: `EventRecorder` hears every Handler event.

Each event is kept as a tuple `(name, *arguments, run)`: the method name without `handle_`,
the arguments as the handler got them (messages, options, inputs, outputs and documents as
copies), and `current_run()` as the handler saw it. Its methods are made from the table of
events (`callbacks.events.EVENTS`), so it hears every event there is. The views
leave the run out, for tests that only check what was heard and in which order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from chainkit.callbacks import Handler, RunInfo, current_run
from chainkit.callbacks.events import EVENTS, CallbackEvent

T = TypeVar("T")


class EventRecorder(Handler):
    """Records every event with its run; safe to share between threads and tasks."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self._lock = threading.Lock()

    def _add(self, name: str, *arguments: Any) -> None:
        run = current_run()
        with self._lock:
            self.events.append((name, *arguments, run))

    def heard(self, *names: str) -> list[tuple[Any, ...]]:
        """The events named (all of them when no name is given) as `(name, *arguments)`."""
        with self._lock:
            events = list(self.events)
        return [event[:-1] for event in events if not names or event[0] in names]

    def described(self, describe: Mapping[str, Callable[..., T]]) -> list[T]:
        """The events `describe` names, each as its function makes it of the event's arguments."""
        return [describe[name](*arguments) for name, *arguments in self.heard(*describe)]

    def runs(self, *names: str) -> list[tuple[str, RunInfo | None]]:
        """The events named (all of them when no name is given) as `(name, run)`."""
        with self._lock:
            events = list(self.events)
        return [(event[0], event[-1]) for event in events if not names or event[0] in names]


_COPIED: dict[str, Callable[[Any], Any]] = {
    "messages": list,
    "options": dict,
    "inputs": dict,
    "outputs": dict,
    "documents": list,
}
"""Arguments kept as copies, as they were when heard, by argument name."""


def _recording(event: CallbackEvent) -> Callable[..., None]:
    """The EventRecorder method for `event`: records it under its method's name less
    `handle_`, its arguments as `_COPIED` says."""
    name = event.method.removeprefix("handle_")
    copies = tuple(_COPIED.get(argument) for argument in event.arguments)

    def record(self: EventRecorder, *arguments: Any) -> None:
        kept = (a if copy is None else copy(a) for copy, a in zip(copies, arguments, strict=True))
        self._add(name, *kept)

    record.__name__ = event.method
    return record


def _add_recorders() -> None:
    """Gives EventRecorder a method for every event of the table."""
    for event in EVENTS:
        setattr(EventRecorder, event.method, _recording(event))


_add_recorders()
