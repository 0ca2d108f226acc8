"""TraceFile: every event of a run as one JSON line, to read back with `chainkit trace`.

A line is `Event.to_dict()` as JSON: `{"kind", "run_id", "parent_id", "run_kind", "name",
"time", "data"}`, `data` as `Event.data` made plain JSON; API keys masked.
"""

from __future__ import annotations

import json
import os
import threading
from types import TracebackType
from typing import TextIO

from chainkit.callbacks.errors import HandlerTypeError
from chainkit.callbacks.events import Event, EventHandler


class TraceFile(EventHandler):
    """Appends each event to the file at `path` as one JSON line, flushed at once, so a trace
    survives a crash and a reader can follow it while the run goes on.

    Safe under concurrency: each line is written whole, under a lock. Close it with `close()`
    or use it as a context manager; an open TraceFile keeps the file open.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if not isinstance(path, str | os.PathLike):
            raise HandlerTypeError(
                f"TraceFile needs a file path (str or pathlib.Path), got {type(path).__name__}"
            )
        self.path = os.fspath(path)
        self._file: TextIO = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TraceFile({self.path!r})"

    def __enter__(self) -> TraceFile:
        return self

    def __exit__(
        self,
        error_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Closes the file; later events are dropped."""
        with self._lock:
            self._file.close()

    def on_event(self, event: Event) -> None:
        line = event_line(event)
        with self._lock:
            if not self._file.closed:
                self._file.write(line)
                self._file.flush()


def event_line(event: Event) -> str:
    """`event` as one line of JSON, ending in a newline: its `to_dict()`, API keys masked."""
    return json.dumps(event.to_dict(), ensure_ascii=False) + "\n"
