"""Reading a trace file back as runs, and showing them as an indented tree of text."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from chainkit._text import one_line
from chainkit.callbacks.errors import TraceFormatError
from chainkit.callbacks.events import ERROR_KINDS


@dataclass
class TraceRun:
    """One run of a trace file: what its start, end or error events said."""

    id: str
    parent_id: str | None
    kind: str
    name: str
    start: float
    end: float | None = None
    inputs: Any = None
    outputs: Any = None
    error: dict[str, Any] | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    retries: list[dict[str, Any]] = field(default_factory=list)
    children: list[TraceRun] = field(default_factory=list)

    @property
    def duration(self) -> float | None:
        return None if self.end is None else max(self.end - self.start, 0.0)


_INPUT = {"chain_start": "inputs", "llm_start": "messages", "tool_start": "input"}
_INPUT["retriever_start"] = "query"
_OUTPUT = {"chain_end": "outputs", "llm_end": "message", "tool_end": "output"}
_OUTPUT["retriever_end"] = "documents"
_FIELDS = ("kind", "run_id", "parent_id", "run_kind", "name", "time", "data")


def read_trace(path: str | os.PathLike[str]) -> list[TraceRun]:
    """The root runs of the trace at `path`, in order of start, each with its children.

    A run whose parent is not in the file (a trace started inside a run) is a root too.
    Raises TraceFormatError naming the first line that is not an event.
    """
    runs: dict[str, TraceRun] = {}
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            if line.strip():
                _apply(runs, _event(line, number, os.fspath(path)))
    roots: list[TraceRun] = []
    for run in sorted(runs.values(), key=lambda r: r.start):
        parent = runs.get(run.parent_id) if run.parent_id is not None else None
        (roots if parent is None else parent.children).append(run)
    return roots


def _event(line: str, number: int, path: str) -> dict[str, Any]:
    try:
        event = json.loads(line)
    except ValueError as error:
        raise TraceFormatError(f"{path} line {number} is not JSON ({error})") from None
    if not isinstance(event, dict) or any(name not in event for name in _FIELDS):
        raise TraceFormatError(
            f"{path} line {number} is not a trace event: expected a JSON object with "
            f"{', '.join(_FIELDS)}"
        )
    if not isinstance(event["run_id"], str) or not isinstance(event["time"], int | float):
        raise TraceFormatError(f"{path} line {number}: run_id must be a string and time a number")
    if not isinstance(event["data"], dict):
        raise TraceFormatError(f"{path} line {number}: data must be a JSON object")
    return event


def _apply(runs: dict[str, TraceRun], event: dict[str, Any]) -> None:
    kind: str = event["kind"]
    data: dict[str, Any] = event["data"]
    run = runs.get(event["run_id"])
    if run is None:
        run = runs[event["run_id"]] = TraceRun(
            event["run_id"],
            event["parent_id"],
            str(event["run_kind"]),
            str(event["name"]),
            float(event["time"]),
        )
    if kind in _INPUT:
        run.start = float(event["time"])
        run.inputs = data.get(_INPUT[kind])
    elif kind in _OUTPUT:
        run.end = float(event["time"])
        run.outputs = data.get(_OUTPUT[kind])
        if kind == "llm_end":
            _take_token_usage(run, run.outputs)
    elif kind in ERROR_KINDS:
        run.end = float(event["time"])
        run.error = _error(data.get("error"))
    elif kind == "retry":
        run.retries.append(data)


def _error(error: Any) -> dict[str, Any]:
    return error if isinstance(error, dict) else {"type": "Error", "message": error}


def _take_token_usage(run: TraceRun, message: Any) -> None:
    meta = message.get("response_meta") if isinstance(message, dict) else None
    usage = meta.get("usage") if isinstance(meta, dict) else None
    if isinstance(usage, dict):
        run.input_tokens = usage.get("prompt_tokens")
        run.output_tokens = usage.get("completion_tokens")


def format_tree(roots: list[TraceRun], width: int = 80) -> str:
    """The runs as indented lines: kind, name, duration, tokens, and the first line of the
    inputs and outputs, each cut to `width` characters; a failed run says ERROR and why."""
    lines: list[str] = []

    def add(run: TraceRun, depth: int) -> None:
        head = f"{'  ' * depth}{run.kind} {one_line(run.name, width)}"
        facts = [_seconds(run.duration)]
        if run.input_tokens is not None or run.output_tokens is not None:
            facts.append(f"{run.input_tokens or 0}+{run.output_tokens or 0} tokens")
        line = f"{head} ({', '.join(facts)})"
        if run.inputs is not None:
            line += f"  in: {first_line(run.inputs, width)}"
        if run.error is not None:
            why = f"{run.error.get('type')}: {run.error.get('message')}"
            line += f"  ERROR {first_line(why, width)}"
        elif run.outputs is not None:
            line += f"  out: {first_line(run.outputs, width)}"
        lines.append(line)
        lines.extend(_retry_line(retry, depth + 1, width) for retry in run.retries)
        for child in run.children:
            add(child, depth + 1)

    for root in roots:
        add(root, 0)
    return "\n".join(lines)


def _retry_line(retry: dict[str, Any], depth: int, width: int) -> str:
    """The marker of a retry within its run: the attempt that failed and why, the wait, and
    the text it had streamed, which the next attempt replaced."""
    error = _error(retry.get("error"))
    line = f"{'  ' * depth}RETRY after attempt {retry.get('attempt')}: "
    line += first_line(f"{error.get('type')}: {error.get('message')}", width)
    wait = retry.get("wait")
    if isinstance(wait, int | float):
        line += f", next in {_seconds(wait)}"
    discarded = retry.get("discarded")
    if discarded:
        line += f"  discarded: {first_line(discarded, width)}"
    return line


def _seconds(duration: float | None) -> str:
    if duration is None:
        return "unfinished"
    return f"{duration * 1000:.0f} ms" if duration < 1 else f"{duration:.2f} s"


def first_line(value: Any, width: int) -> str:
    """The first line of a value's text: a chain's one input or output as itself, a list of
    messages as its last, a message as its text or the tools it calls; escaped and cut."""
    text = _text(value)
    return one_line(text.strip().split("\n", 1)[0] if text.strip() else text, width)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(_is_message(v) for v in value):
        return _text(value[-1])
    if _is_message(value):
        calls = value.get("tool_calls") or []
        names = [c.get("function", {}).get("name", "?") for c in calls if isinstance(c, dict)]
        content = value.get("content") or ""
        return f"{content} [calls {', '.join(names)}]".strip() if names else str(content)
    if isinstance(value, dict) and len(value) == 1:
        return _text(next(iter(value.values())))
    return json.dumps(value, ensure_ascii=False, default=str)


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value and "content" in value
