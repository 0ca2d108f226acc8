"""TraceFile: every event of a run as one JSON line, to read back with `chainkit trace`.

A line is `{"kind", "run_id", "parent_id", "run_kind", "name", "time", "data"}`, `data` as
`Event.data` with messages, actions and errors turned into plain JSON; API keys masked.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from types import TracebackType
from typing import Any, TextIO

from chainkit._redact import mask_secret_fields, redact
from chainkit._text import shorten
from chainkit.callbacks.errors import HandlerTypeError
from chainkit.callbacks.events import Event, EventHandler

_NOT_RECORDED = frozenset(("streaming_func", "callbacks"))


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
    """`event` as one line of JSON, ending in a newline, with API keys masked."""
    data = dict(event.data)
    if "options" in data:
        data["options"] = {k: v for k, v in data["options"].items() if k not in _NOT_RECORDED}
    record = {
        "kind": event.kind,
        "run_id": event.run_id,
        "parent_id": event.parent_id,
        "run_kind": event.run_kind,
        "name": event.name,
        "time": event.time,
        "data": data,
    }
    try:
        record["data"] = mask_secret_fields(data)
        text = json.dumps(record, default=plain_json, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        # A value JSON cannot hold (a cycle, a NaN, a key that is no string): its repr instead.
        record["data"] = {"repr": shorten(repr(event.data), 10_000)}
        text = json.dumps(record, default=plain_json, ensure_ascii=False)
    return redact(text) + "\n"


def plain_json(value: Any) -> Any:
    """What JSON cannot write as it is: messages as their wire shape, errors as their type and
    message, other dataclasses (actions, steps) as their fields, anything else as its repr."""
    if isinstance(value, BaseException):
        return {"type": type(value).__name__, "message": str(value)}
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    name = getattr(value, "name", None)
    if isinstance(name, str):  # a tool a retriever selected
        return name
    return repr(value)
