"""`ListParser`: a list of items written one per line (numbered, bulleted or plain) or
separated by commas."""

from __future__ import annotations

import re
from typing import Any, Final, Literal, get_args

from chainkit._text import described
from chainkit.parsers.base import CopyBudget, Parser, checked_text
from chainkit.parsers.errors import ParseError, ParserConfigError

ListStyle = Literal["auto", "lines", "comma", "numbered", "bulleted"]
"""How a list is written: `lines` one item per line (a marker such as `1.` or `-` taken off),
`comma` items separated by commas (or line breaks), `numbered` and `bulleted` the lines with
such a marker (other lines passed over), `auto` as the reply shows (see `ListParser`)."""

_STYLES: Final = get_args(ListStyle)
_MARKER: Final = re.compile(r"(?:(\d{1,9}[.)])|[-*•+])[ \t]")
"""A list marker at the start of a line (after its indentation): `1.`, `1)`, `-`, `*`, `•`,
`+`, then a space. Matched at one place, no nested repeats: linear."""
_COMMA_OR_LINE: Final = re.compile(r"[,\n]")
_EXPECTED: Final[dict[ListStyle, str]] = {
    "auto": "a list (one item per line, or separated by commas)",
    "lines": "a list, one item per line",
    "comma": "a comma-separated list",
    "numbered": "a numbered list (lines starting with 1. or 1))",
    "bulleted": "a bulleted list (lines starting with -, * or •)",
}
_INSTRUCTIONS: Final[dict[ListStyle, str]] = {
    "auto": "Answer with a bulleted list, one item per line (- first item), and nothing else.",
    "lines": "Answer with one item per line, and nothing else.",
    "comma": "Answer with the items separated by commas (first, second, third), and nothing else.",
    "numbered": "Answer with a numbered list, one item per line (1. first item), and nothing else.",
    "bulleted": "Answer with a bulleted list, one item per line (- first item), and nothing else.",
}


class ListParser(Parser):
    """The items of a list, as strings (spaces around each taken off, empty ones dropped).

    With `style="auto"` (the default): when some lines start with a marker (`1.`, `1)`, `-`,
    `*`, `•`, `+`) the items are those lines, so an introduction ("Here are three:") is passed
    over; else each line is an item, and a reply of one line is split at its commas. Other
    styles: see `ListStyle`. A reply with no item raises `ParseError`.

    Streamed, a partial value is the list so far, each time one more item is whole: at its line
    break (or comma, with `style="comma"`). With `auto`, lines without a marker come only with
    the whole reply, since a marked line may still follow; a comma list streams with
    `style="comma"`.
    """

    output_type = list[str]

    def __init__(self, style: ListStyle = "auto", *, max_retries: int = 0) -> None:
        super().__init__(max_retries=max_retries)
        if style not in _STYLES:
            raise ParserConfigError(
                f"ListParser style must be one of {', '.join(_STYLES)}, got {described(style)}"
            )
        self.style: ListStyle = style

    def __repr__(self) -> str:
        return f"ListParser(style={self.style!r})"

    def parse(self, text: str) -> list[str]:
        items = _Items(self.style)
        items.feed(checked_text(self, text))
        found = items.finish()
        if not found:
            raise ParseError(self.name, _EXPECTED[self.style], text, "no item in it")
        return found

    def reader(self) -> ListReader:
        return ListReader(self.style)

    def instructions(self) -> str:
        return _INSTRUCTIONS[self.style]


class ListReader:
    """The list so far, handed on each time one more item is whole (a long list not at every
    item: see `CopyBudget`)."""

    def __init__(self, style: ListStyle) -> None:
        self._items = _Items(style)
        self._budget = CopyBudget()
        self._shown = 0

    def feed(self, chunk: str) -> list[Any]:
        self._items.feed(chunk)
        self._budget.read(len(chunk))
        found = self._items.items
        if len(found) == self._shown or not self._budget.due(len(found)):
            return []
        self._budget.spent()
        self._shown = len(found)
        return [list(found)]


class _Items:
    """Reads a list's text piece by piece (each character once): `items` are the items known
    to be whole; `finish` gives every item once the text has ended."""

    def __init__(self, style: ListStyle) -> None:
        self.style = style
        self.items: list[str] = []
        self._unmarked: list[str] = []  # auto: lines without a marker, before any with one
        self._marked = False
        self._pieces: list[str] = []  # of the line (or comma-separated item) being read

    def feed(self, chunk: str) -> None:
        separator = _COMMA_OR_LINE if self.style == "comma" else None
        at = 0
        while True:
            end = chunk.find("\n", at) if separator is None else _search(separator, chunk, at)
            if end < 0:
                self._pieces.append(chunk[at:])
                return
            self._pieces.append(chunk[at:end])
            self._end_piece()
            at = end + 1

    def finish(self) -> list[str]:
        self._end_piece()
        if self.style == "auto" and not self._marked:
            if len(self._unmarked) == 1:
                return _comma_items(self._unmarked[0])
            return self._unmarked
        return self.items

    def _end_piece(self) -> None:
        text = "".join(self._pieces).strip()
        self._pieces = []
        if not text:
            return
        if self.style in ("comma", "lines"):
            self.items.append(_unmarked(text) if self.style == "lines" else text)
            return
        marker = _MARKER.match(text)
        if marker is None:
            if self.style == "auto" and not self._marked:
                self._unmarked.append(text)
            return
        numbered = marker.group(1) is not None
        if (self.style == "numbered" and not numbered) or (self.style == "bulleted" and numbered):
            return
        self._marked = True
        item = text[marker.end() :].strip()
        if item:
            self.items.append(item)


def _search(pattern: re.Pattern[str], text: str, at: int) -> int:
    found = pattern.search(text, at)
    return -1 if found is None else found.start()


def _unmarked(line: str) -> str:
    marker = _MARKER.match(line)
    return line if marker is None else line[marker.end() :].strip()


def _comma_items(line: str) -> list[str]:
    return [item for item in (part.strip() for part in line.split(",")) if item]
