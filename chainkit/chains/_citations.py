"""Reading an answer's citations back: `[id]`, or several ids in one pair of brackets
(`[a.md@0, b.md@40]`, `;` too), each checked against the chunks the model was shown.

One pass over the text, no regex: brackets are matched with a stack (an id may hold balanced
brackets of its own, as `draft [v2].md@0` does), and code (between backticks) is passed over.
A bracket that names a chunk shown is a citation wherever it stands; one that names none is
an invented citation only where a citation could stand: not right after an ASCII letter,
digit or underscore (`items[0]`; Chinese text cites with no space before), not before `(` (a
Markdown link), not empty, on one line and at most `MAX_ID_CHARS` long. An id with an
unmatched bracket or a line break cannot be cited.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass

MAX_ID_CHARS = 300
"""Brackets holding more than this are prose, not a citation (ids are file names and
offsets, or hashes of 64 characters)."""


@dataclass(frozen=True, slots=True)
class Citations:
    """The ids an answer cites that name a chunk it was shown (`cited`), and those that name
    none (`invented`), each once, in the order they first appear."""

    cited: tuple[str, ...]
    invented: tuple[str, ...]


def read_citations(text: str, known: Collection[str]) -> Citations:
    """The citations of `text` (see the module), checked against the ids in `known`."""
    cited: dict[str, None] = {}
    invented: dict[str, None] = {}
    for start, end in _outer_brackets(text):
        content = text[start + 1 : end]
        whole = content.strip()
        if whole in known:
            cited[whole] = None
            continue
        if not _may_cite(text, start, end, whole):
            continue
        for part in _parts(whole):
            (cited if part in known else invented)[part] = None
    return Citations(tuple(cited), tuple(invented))


def _may_cite(text: str, start: int, end: int, content: str) -> bool:
    """Whether brackets that name no chunk stand where a citation could (see the module)."""
    if not content or len(content) > MAX_ID_CHARS or "\n" in content:
        return False
    before = text[start - 1] if start else " "
    after = text[end + 1] if end + 1 < len(text) else " "
    indexing = before.isascii() and (before.isalnum() or before == "_")
    return not indexing and after != "("


def _parts(content: str) -> Iterator[str]:
    """The ids of one pair of brackets: split at commas and semicolons."""
    for piece in content.replace(";", ",").split(","):
        part = piece.strip()
        if part:
            yield part


def _outer_brackets(text: str) -> list[tuple[int, int]]:
    """(open, close) of each outermost pair of matched square brackets outside code, in
    order."""
    pairs: list[tuple[int, int]] = []
    for start, end in _prose_spans(text):
        opened: list[int] = []
        for at in range(start, end):
            char = text[at]
            if char == "[":
                opened.append(at)
            elif char == "]" and opened:
                pairs.append((opened.pop(), at))
    pairs.sort()
    outer: list[tuple[int, int]] = []
    for pair in pairs:
        if not outer or pair[0] > outer[-1][1]:
            outer.append(pair)
    return outer


def _prose_spans(text: str) -> list[tuple[int, int]]:
    """The spans of `text` outside code: a run of backticks opens code that the next run of
    the same length closes (a fence's three, an inline span's one); a run never closed is
    text. The runs are found in one pass and each closer looked up by its length."""
    runs: list[tuple[int, int]] = []  # (start, length) of each run of backticks
    at = text.find("`")
    while at != -1:
        end = at
        while end < len(text) and text[end] == "`":
            end += 1
        runs.append((at, end - at))
        at = text.find("`", end)
    later: dict[int, list[int]] = {}  # run length -> indexes of its runs, last first
    for index in range(len(runs) - 1, -1, -1):
        later.setdefault(runs[index][1], []).append(index)
    spans: list[tuple[int, int]] = []
    prose_from = index = 0
    while index < len(runs):
        start, length = runs[index]
        same = later[length]
        while same and same[-1] <= index:
            same.pop()
        if not same:  # never closed: text
            index += 1
            continue
        closer = same.pop()
        spans.append((prose_from, start))
        prose_from = runs[closer][0] + length
        index = closer + 1
    spans.append((prose_from, len(text)))
    return spans
