"""The input of a batch job: one JSON object a line, `{"id": 7, "input": "…"}`.

A line's `id` (a string or a whole number) names its run in the output; without one, the line
number does. Every other key is an input of the chain. Blank lines are skipped. A line that
is not a JSON object, has an id of another type, or lacks an input the chain needs is a
`BadLine`, which names what is wrong; it never stops the job.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from chainkit._text import shorten

EXAMPLE = '{"id": 7, "input": "What is 2 + 2?"}'

RunId = int | str


@dataclass(frozen=True, slots=True)
class Record:
    """One run to make: its id, the line it came from, and the chain's inputs."""

    id: RunId
    line: int
    inputs: dict[str, Any]


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that cannot be run, and why."""

    id: RunId
    line: int
    problem: str


def id_key(run_id: RunId) -> str:
    """The id as the output writes it, so 7 and "7" stay two runs."""
    return json.dumps(run_id, ensure_ascii=False)


def read(path: str, needed: Sequence[str]) -> Iterator[Record | BadLine]:
    """The records of the file at `path`, in order; `needed` are the chain's input keys."""
    with open(path, "rb") as lines:
        for number, raw in enumerate(lines, 1):
            if raw.strip():
                yield parse(raw, number, needed)


def count(path: str) -> int:
    """How many lines of the file at `path` are not blank."""
    with open(path, "rb") as lines:
        return sum(1 for raw in lines if raw.strip())


def parse(raw: bytes, number: int, needed: Sequence[str]) -> Record | BadLine:
    """Line `number` of the input, as a Record or a BadLine."""
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        return BadLine(number, number, f"not UTF-8 text (at byte {error.start + 1})")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        return BadLine(number, number, f"not JSON ({shorten(str(error), 100)}); expected {EXAMPLE}")
    if not isinstance(data, dict):
        return BadLine(
            number, number, f"a JSON {type(data).__name__}, not an object; expected {EXAMPLE}"
        )
    run_id = data.pop("id", number)
    if isinstance(run_id, bool) or not isinstance(run_id, int | str):
        return BadLine(
            number,
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
