"""TraceFile: every event of a run as one JSON line, to read back with `chainkit trace`.

A line is `Event.to_dict()` as JSON: `{"kind", "run_id", "parent_id", "run_kind", "name",
"time", "data"}`, `data` as `Event.data` made plain JSON; API keys masked.

A key a model streams in pieces is masked too: a `token` line holds the reply's text up to its
last whitespace, and the word after it waits for the next token, or for the reply's end, to
show whether it is a key (see `PieceMasker`). So a token line may hold the text of several
tokens, and a last one may come just before the reply's `llm_end` or `llm_error` line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import threading
import time
from types import TracebackType
from typing import TextIO

from chainkit._redact import PieceMasker
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
        # By run: each reply being streamed, and its first token, whose run the rest is of.
        self._held: dict[str, tuple[PieceMasker, Event]] = {}

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
        """Writes the text still held back of replies that never ended, and closes the file;
        later events are dropped."""
        with self._lock:
            if not self._file.closed:
                now = time.time()
                for masker, token in self._held.values():
                    self._write(_rest_of_reply(masker, token, now))
            self._held.clear()
            self._file.close()

    def on_event(self, event: Event) -> None:
        # A chunk that is no text (a backend's own streaming object) holds no key in pieces.
        if event.kind == "token" and isinstance(event.data["text"], str):
            self._on_token(event)
            return
        line = event_line(event)
        with self._lock:
            held = self._held.pop(event.run_id, None)
            if held is not None:
                self._write(_rest_of_reply(*held, event.time))
            self._write(line)

    def _on_token(self, event: Event) -> None:
        with self._lock:
            if self._file.closed:
                return
            held = self._held.get(event.run_id)
            if held is None:
                held = self._held[event.run_id] = (PieceMasker(), event)
            text = held[0].feed(event.data["text"])
            if text:
                self._write(event_line(dataclasses.replace(event, data={"text": text})))

    def _write(self, line: str) -> None:
        """Writes `line` whole, under the lock."""
        if line and not self._file.closed:
            self._file.write(line)
            self._file.flush()


def _rest_of_reply(masker: PieceMasker, token: Event, at: float) -> str:
    """A line like `token`, at time `at`, with the text `masker` still held back of a reply
    that ended (or never will); "" when none was."""
    text = masker.flush()
    if not text:
        return ""
    return event_line(dataclasses.replace(token, data={"text": text}, time=at))


def event_line(event: Event) -> str:
    """`event` as one line of JSON, ending in a newline: its `to_dict()`, API keys masked."""
    text = json.dumps(event.to_dict(), ensure_ascii=False)
    return _LONE_SURROGATE.sub(_escaped, text) + "\n"


# What UTF-8 cannot encode: half of a pair (from text decoded with "surrogateescape", such as
# a file name or an argument that was not UTF-8). Only inside JSON strings, where its escape
# reads back as the same character.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"
