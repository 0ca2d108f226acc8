"""The input of a batch job: one JSON object a line, `{"id": 7, "input": "…"}`.

A line's `id` (a string or a whole number) names its run in the output. A line without a
usable id (none given, or the line is no JSON object, or its id is of another type) is named
by its line number instead, in a namespace of its own: its result line has `"id": null` and
`"line": N`, so it never takes an id that a real record may use. Every other key is an input
of the chain. Blank lines are skipped. A line that is not a JSON object, has an id of another
type, or lacks an input the chain needs is a `BadLine`, which names what is wrong; it never
stops the job.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

from chainkit._text import shorten

EXAMPLE = '{"id": 7, "input": "What is 2 + 2?"}'

RunId = int | str
_quoted: Callable[[str], str] = encode_basestring  # json.dumps of a str, as a fast call


@dataclass(frozen=True, slots=True)
class Record:
    """One run to make: its id (None for a line without one), the line it came from, and the
    chain's inputs."""

    id: RunId | None
    line: int
    inputs: dict[str, Any]


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that cannot be run (its id None when it has no usable one), and why."""

    id: RunId | None
    line: int
    problem: str


def run_key(run_id: RunId | None, line: int) -> str:
    """What names a run, in the output and across resumes: its id as JSON writes it (so 7 and
    "7" stay two runs), or, for a line without an id, "line N", which no id's JSON can be."""
    if run_id is None:
        return f"line {line}"
    if isinstance(run_id, str):
        return _quoted(run_id)
    return int.__repr__(run_id)  # what json.dumps writes, without its cost per call


def key_of(item: Record | BadLine) -> str:
    """The `run_key` of an input line."""
    return run_key(item.id, item.line)


def names(item: Record | BadLine) -> dict[str, Any]:
    """The keys that name `item`'s run at the head of its result line."""
    if item.id is None:
        return {"id": None, "line": item.line}
    return {"id": item.id}


def read(path: str, needed: Sequence[str]) -> Iterator[Record | BadLine]:
    """The records of the file at `path`, in order; `needed` are the chain's input keys."""
    with open(path, "rb") as lines:
        for number, raw in enumerate(lines, 1):
            if raw.strip():
                yield parse(raw, number, needed)


def parse(raw: bytes, number: int, needed: Sequence[str]) -> Record | BadLine:
    """Line `number` of the input, as a Record or a BadLine."""
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        return BadLine(None, number, f"not UTF-8 text (at byte {error.start + 1})")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        return BadLine(None, number, f"not JSON ({shorten(str(error), 100)}); expected {EXAMPLE}")
    if not isinstance(data, dict):
        return BadLine(
            None, number, f"a JSON {type(data).__name__}, not an object; expected {EXAMPLE}"
        )
    run_id = data.pop("id", None)
    if run_id is not None and (isinstance(run_id, bool) or not isinstance(run_id, int | str)):
        return BadLine(
            None,
            number,
            f"its id {shorten(json.dumps(run_id), 60)} is neither a string nor a whole number",
        )
    missing = [key for key in needed if key not in data]
    if missing:
        given = sorted(data) or "no inputs"
        return BadLine(
            run_id,
            number,
            f"missing input {', '.join(map(repr, missing))}: the chain takes "
            f"{list(needed)}, the line gives {given}",
        )
    return Record(run_id, number, data)
