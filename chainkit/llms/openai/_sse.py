"""Server-sent events, decoded as the HTML standard defines the event-stream format.

Bytes go in as they arrive and events come out as they end: the body is UTF-8 (a leading
byte order mark is skipped, bytes that are not UTF-8 become U+FFFD); lines end at CRLF, LF or
a lone CR, and nowhere else; a line starting with a colon is a comment; an event's `data:`
lines are joined with newlines and the event ends at a blank line. Two leniencies, for
servers seen in the wild: an event still open when the body ends is kept, not discarded, and
a `data:` line that follows data which is already a whole JSON value (or [DONE]) starts a new
event, since some servers end events with a single newline.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass

DONE = "[DONE]"
"""The data of the event that ends an OpenAI-style stream."""

_BOM = "\ufeff"


@dataclass(slots=True)
class ServerEvent:
    """One event: its `type` ("message" unless an `event:` field named it) and its data."""

    type: str
    data: str


class SSEDecoder:
    """Turns the bytes of an event stream into its events, whatever the bytes' chunking."""

    __slots__ = ("_after_cr", "_data", "_decoder", "_line", "_started", "_type", "_whole")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._started = False  # whether the first character, a possible BOM, has been seen
        self._after_cr = False  # the text so far ended in CR: an LF next ends no further line
        self._line: list[str] = []  # the pieces of a line not ended yet
        self._data: list[str] = []  # the data lines of the event under way
        self._whole = _WholeData()  # whether they are a whole JSON value yet
        self._type = ""

    def feed(self, chunk: bytes) -> list[ServerEvent]:
        """The events that `chunk` (the next bytes of the body) ends."""
        return self._text(self._decoder.decode(chunk))

    def close(self) -> list[ServerEvent]:
        """The events left once the body has ended: its last line and event, unended."""
        events = self._text(self._decoder.decode(b"", True))
        if self._line:
            line = "".join(self._line)
            self._line = []
            self._take(line, events)
        self._dispatch(events)
        return events

    def _text(self, text: str) -> list[ServerEvent]:
        events: list[ServerEvent] = []
        if not self._started and text:
            self._started = True
            text = text.removeprefix(_BOM)
        if self._after_cr and text:
            self._after_cr = False
            text = text.removeprefix("\n")
        if not text:
            return events
        if "\r" in text:
            self._after_cr = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if "\n" not in text:
            self._line.append(text)  # gathered, not concatenated: a long line stays linear
            return events
        lines = text.split("\n")
        if self._line:
            self._line.append(lines[0])
            lines[0] = "".join(self._line)
            self._line = []
        unended = lines.pop()
        if unended:
            self._line.append(unended)
        data = self._data
        for line in lines:
            if not line:  # the end of an event, dispatched here as the loop's common case
                if data:
                    events.append(ServerEvent(self._type or "message", "\n".join(data)))
                    data = self._data = []
                    self._whole = _WholeData()
                self._type = ""
            elif not data and line.startswith("data: "):
                data.append(line[6:])  # the usual line: an event's first data
            else:
                self._take(line, events)
                data = self._data
        return events

    def _take(self, line: str, events: list[ServerEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[0] == ":":
            return
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            if self._data and self._whole.of(self._data):
                self._dispatch(events)
            self._data.append(value)
        elif name == "event":
            self._type = value
        # `id` and `retry` only serve a client that reconnects, which a model call never
        # does; the standard says to ignore any other field.

    def _dispatch(self, events: list[ServerEvent]) -> None:
        if self._data:
            events.append(ServerEvent(self._type or "message", "\n".join(self._data)))
            self._data = []
            self._whole = _WholeData()
        self._type = ""


class _WholeData:
    """Whether the data lines of an event, joined, are already a whole JSON value (or [DONE]),
    each line read once however many follow: JSON is tried only once the lines so far close
    every bracket and string they open, and never again once it fails before their end (what
    comes after a newline cannot mend what comes before it)."""

    __slots__ = ("_depth", "_hopeless", "_in_string", "_read", "_solid")

    def __init__(self) -> None:
        self._read = 0  # lines read
        self._depth = 0  # brackets open outside strings
        self._in_string = False
        self._solid = 0  # characters other than whitespace
        self._hopeless = False

    def of(self, lines: list[str]) -> bool:
        """Whether `lines`, the data lines so far (those read before and any new ones),
        joined with newlines, are a whole JSON value or [DONE]."""
        for line in lines[self._read :]:
            self._solid += len("".join(line.split()))
            if not self._hopeless:
                self._scan(line)
        self._read = len(lines)
        if self._solid == len(DONE) and "\n".join(lines).strip() == DONE:
            return True
        if self._hopeless or self._depth or self._in_string or not self._solid:
            return False
        data = "\n".join(lines)
        try:
            json.loads(data)
        except json.JSONDecodeError as error:
            self._hopeless = error.pos < len(data.rstrip())
            return False
        except (ValueError, RecursionError):
            return False
        return True

    def _scan(self, line: str) -> None:
        """Follows strings and brackets through `line`, which a newline precedes."""
        if self._in_string:
            self._hopeless = True  # a JSON string holds no newline
            return
        for found in _STRUCTURE.finditer(line):
            mark = found.group()
            if self._in_string:
                self._in_string = mark != '"'  # an escape or a bracket is text here
            elif mark == '"':
                self._in_string = True
            elif mark in "[{":
                self._depth += 1
            elif mark in "]}":
                self._depth -= 1


# What matters to where a JSON value ends: quotes, brackets, and escapes (a backslash and the
# character it escapes, so an escaped quote does not end its string).
_STRUCTURE = re.compile(r'\\.|["\[\]{}]')
