"""Reading a trace file back as runs, showing them as an indented tree of text, and what each
model run's prompt added to the one before it."""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from chainkit._text import one_line
from chainkit.callbacks.errors import TraceFormatError
from chainkit.callbacks.events import ERROR_KINDS

logger = logging.getLogger("chainkit")


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
    cached: bool = False
    """A model run a response cache answered: its tokens were not paid for, so it shows none."""
    model: str | None = None
    options: dict[str, Any] | None = None
    first_token: float | None = None
    retries: list[dict[str, Any]] = field(default_factory=list)
    approval: dict[str, Any] | None = None
    """A tool run's approval: the data of its approval_decided event, or of its
    approval_required one while no decision came (no `decision` key then)."""
    citations: dict[str, list[str]] | None = None
    """An answer chain's run: the ids of its citations event, `cited` and `invented`."""
    children: list[TraceRun] = field(default_factory=list)

    @property
    def duration(self) -> float | None:
        return None if self.end is None else max(self.end - self.start, 0.0)

    @property
    def time_to_first_token(self) -> float | None:
        """Seconds from the model run's start to its first streamed token, if it streamed."""
        return None if self.first_token is None else max(self.first_token - self.start, 0.0)


@dataclass(frozen=True)
class PromptDiff:
    """How a model run's prompt extends the one before it: the first `shared_messages`
    messages are the same, and so are the first `shared_chars` characters of the next one's
    content (cut at a line start); `added` is the rest."""

    shared_messages: int
    shared_chars: int
    added: list[dict[str, Any]]


_INPUT = {"chain_start": "inputs", "llm_start": "messages", "tool_start": "input"}
_INPUT["retriever_start"] = "query"
_OUTPUT = {"chain_end": "outputs", "llm_end": "message", "tool_end": "output"}
_OUTPUT["retriever_end"] = "documents"
_FIELDS = ("kind", "run_id", "parent_id", "run_kind", "name", "time", "data")
_LONGEST_TIME = 1e15
"""The largest time (seconds since the epoch, either way) a trace may hold: any two differ by
a finite number of milliseconds, which a page's JSON can hold."""


def read_trace(path: str | os.PathLike[str]) -> list[TraceRun]:
    """The root runs of the trace at `path`, in order of start, each with its children.

    A run whose parent is not in the file (a trace started inside a run) is a root too. A
    last line cut short (the process writing it died mid-line) is skipped with a warning on
    the `chainkit` logger. Raises TraceFormatError naming the first other line that is not
    an event.
    """
    with open(path, "rb") as file:
        return trace_runs(file, os.fspath(path))


def trace_runs(lines: Iterable[bytes], name: str) -> list[TraceRun]:
    """The root runs of a trace's `lines` (as a trace file holds them), as `read_trace`
    reads a file's; `name` is what a TraceFormatError calls the trace."""
    runs: dict[str, TraceRun] = {}
    for number, line in enumerate(lines, 1):
        event = _event(line, number, name)
        if event is not None:
            _apply(runs, event)
    roots: list[TraceRun] = []
    for run in sorted(runs.values(), key=lambda r: r.start):
        parent = runs.get(run.parent_id) if run.parent_id is not None else None
        (roots if parent is None else parent.children).append(run)
    _check_no_cycle(runs, roots, name)
    return roots


def _check_no_cycle(runs: dict[str, TraceRun], roots: list[TraceRun], path: str) -> None:
    """TraceFormatError naming a run that is its own ancestor (its parent_id leads back to
    it): such runs hang from no root, so nothing would show them."""
    reached = sum(1 for _ in walk(roots))
    if reached < len(runs):
        shown = {id(run) for run, _ in walk(roots)}
        looped = next(run for run in runs.values() if id(run) not in shown)
        raise TraceFormatError(
            f"{path}: run {one_line(looped.id, 80)!r} is its own ancestor (following parent_id "
            "from it leads back to it)"
        )


def walk(roots: list[TraceRun]) -> Iterator[tuple[TraceRun, int]]:
    """Every run under `roots` with its depth, each before its children, in order; a loop,
    not recursion, so runs nested any number of levels deep are walked."""
    stack = [(root, 0) for root in reversed(roots)]
    while stack:
        run, depth = stack.pop()
        yield run, depth
        stack.extend((child, depth + 1) for child in reversed(run.children))


def _event(line: bytes, number: int, path: str) -> dict[str, Any] | None:
    """The event a line holds; None for a blank line or a torn last one."""
    if not line.strip():
        return None
    try:
        event = json.loads(line.decode("utf-8"))
    except RecursionError:
        raise TraceFormatError(
            f"{path} line {number} nests its JSON too deeply to be read"
        ) from None
    except ValueError as error:  # not UTF-8, or not JSON
        # Only the last line can lack its end: the start of an event whose writer died.
        if not line.endswith(b"\n") and line.lstrip().startswith(b"{"):
            logger.warning("%s line %d is cut short: skipped it", path, number)
            return None
        raise TraceFormatError(f"{path} line {number} is not JSON ({_why(error)})") from None
    return _checked(event, number, path)


def _why(error: ValueError) -> str:
    if isinstance(error, UnicodeDecodeError):
        return f"byte {error.start + 1} is not UTF-8"
    return str(error)


def _checked(event: Any, number: int, path: str) -> dict[str, Any]:
    """`event`, when it has the fields of one, each of its type; else TraceFormatError."""
    if not isinstance(event, dict) or any(name not in event for name in _FIELDS):
        raise TraceFormatError(
            f"{path} line {number} is not a trace event: expected a JSON object with "
            f"{', '.join(_FIELDS)}"
        )
    if not isinstance(event["run_id"], str) or not isinstance(event["parent_id"], str | None):
        raise TraceFormatError(f"{path} line {number}: run_id and parent_id must be strings")
    if not _is_time(event["time"]):
        raise TraceFormatError(
            f"{path} line {number}: time must be a number of seconds since the epoch, at most "
            f"{_LONGEST_TIME:.0e} either way"
        )
    if not isinstance(event["kind"], str):
        raise TraceFormatError(f"{path} line {number}: kind must be a string")
    if not isinstance(event["data"], dict):
        raise TraceFormatError(f"{path} line {number}: data must be a JSON object")
    return event


def _is_time(value: Any) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value) and abs(value) <= _LONGEST_TIME
    except OverflowError:  # an int too large for a float
        return False


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
        if kind == "llm_start":
            _take_model_request(run, data)
    elif kind == "token" and run.first_token is None:
        run.first_token = float(event["time"])
    elif kind == "retry":
        run.retries.append(data)
    elif kind == "approval_decided" or (kind == "approval_required" and run.approval is None):
        run.approval = data
    elif kind == "citations":
        run.citations = {key: _ids(data.get(key)) for key in ("cited", "invented")}
    elif kind in _OUTPUT:
        run.end = float(event["time"])
        run.outputs = data.get(_OUTPUT[kind])
        if kind == "llm_end":
            _take_token_usage(run, run.outputs)
    elif kind in ERROR_KINDS:
        run.end = float(event["time"])
        run.error = _error(data.get("error"))


def _error(error: Any) -> dict[str, Any]:
    return error if isinstance(error, dict) else {"type": "Error", "message": error}


def _take_model_request(run: TraceRun, data: dict[str, Any]) -> None:
    options = data.get("options")
    run.options = options if isinstance(options, dict) else None
    model = data.get("model")
    run.model = model if isinstance(model, str) and model else None


def _take_token_usage(run: TraceRun, message: Any) -> None:
    meta = message.get("response_meta") if isinstance(message, dict) else None
    run.cached = isinstance(meta, dict) and meta.get("cached") is True
    usage = meta.get("usage") if isinstance(meta, dict) and not run.cached else None
    if isinstance(usage, dict):
        run.input_tokens = _count(usage.get("prompt_tokens"))
        run.output_tokens = _count(usage.get("completion_tokens"))


def _count(value: Any) -> int | None:
    """A token count, if `value` is one: a file may hold anything, to be added up or shown."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def prompt_diffs(roots: list[TraceRun]) -> dict[str, PromptDiff]:
    """Each model run's prompt against that of the model run before it under the same parent
    (the previous step of the same agent or chain), by run id; a parent's first model run, or
    one whose prompt shares nothing with the one before, has none."""
    diffs: dict[str, PromptDiff] = {}
    for parent, _ in walk(roots):
        previous: TraceRun | None = None
        for run in parent.children:
            if run.kind == "llm":
                diff = None if previous is None else prompt_diff(previous.inputs, run.inputs)
                if diff is not None:
                    diffs[run.id] = diff
                previous = run
    return diffs


def prompt_diff(previous: Any, current: Any) -> PromptDiff | None:
    """What the messages `current` add to the messages `previous`; None when either is no
    list of messages or they share nothing."""
    if not (_is_messages(previous) and _is_messages(current)):
        return None
    shared = 0
    while shared < min(len(previous), len(current)) and previous[shared] == current[shared]:
        shared += 1
    added = list(current[shared:])
    chars = 0
    if added and shared < len(previous) and previous[shared].get("role") == added[0]["role"]:
        before, now = previous[shared].get("content"), added[0].get("content")
        if isinstance(before, str) and isinstance(now, str):
            # Of two texts, not paths: the characters both start with.
            common = len(os.path.commonprefix([before, now]))  # noqa: RUF071
            chars = now.rfind("\n", 0, common) + 1  # from the start of the line that differs
            added[0] = {**added[0], "content": now[chars:]}
    return None if shared == chars == 0 else PromptDiff(shared, chars, added)


def added_text(diff: PromptDiff) -> str:
    """The messages a prompt added, as text: each as `role: text`, but for the rest of a
    message whose start was already there."""
    parts = [f"{message['role']}: {_text(message)}" for message in diff.added]
    if diff.shared_chars:
        parts[0] = _text(diff.added[0])
    return "\n".join(parts)


def format_tree(roots: list[TraceRun], width: int = 80) -> str:
    """The runs as indented lines: kind, name, duration, tokens, and the first line of the
    inputs and outputs, each cut to `width` characters; a failed run says ERROR and why. A
    model run after another under the same parent shows what its prompt added instead."""
    lines: list[str] = []
    diffs = prompt_diffs(roots)
    for run, depth in walk(roots):
        head = f"{'  ' * depth}{one_line(run.kind, width)} {one_line(run.name, width)}"
        facts = [_seconds(run.duration)]
        if run.input_tokens is not None or run.output_tokens is not None:
            facts.append(f"{run.input_tokens or 0}+{run.output_tokens or 0} tokens")
        if run.cached:
            facts.append("from the cache")
        line = f"{head} ({', '.join(facts)})"
        if run.id in diffs:
            line += f"  added: {one_line(added_text(diffs[run.id]), width) or '(nothing)'}"
        elif run.inputs is not None:
            line += f"  in: {first_line(run.inputs, width)}"
        if run.error is not None:
            why = f"{run.error.get('type')}: {run.error.get('message')}"
            line += f"  ERROR {first_line(why, width)}"
        elif run.outputs is not None:
            line += f"  out: {first_line(run.outputs, width)}"
        lines.append(line)
        lines.extend(_retry_line(retry, depth + 1, width) for retry in run.retries)
        if run.approval is not None:
            lines.append(_approval_line(run.approval, depth + 1, width))
        if run.citations is not None:
            lines.append(_citations_line(run.citations, depth + 1, width))
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


_DECIDED = {"approve": "approved", "deny": "DENIED", "edit": "edited"}


def _approval_line(approval: dict[str, Any], depth: int, width: int) -> str:
    """The marker of a person's decision on a tool call: approved, denied and why, edited and
    to what; or that it waits for one."""
    decision = approval.get("decision")
    line = f"{'  ' * depth}APPROVAL "
    if decision is None:
        return line + "required, not decided"
    line += _DECIDED.get(str(decision), one_line(str(decision), width))
    if approval.get("reason"):
        line += f": {first_line(approval['reason'], width)}"
    if approval.get("arguments") is not None:
        line += f"  to: {first_line(approval['arguments'], width)}"
    return line


def _citations_line(citations: dict[str, list[str]], depth: int, width: int) -> str:
    """The marker of an answer's citations: the ids it cites, and those it INVENTED (no
    document shown has them); NONE for an answer that cites nothing."""
    cited, invented = citations["cited"], citations["invented"]
    line = f"{'  ' * depth}CITATIONS "
    if not cited and not invented:
        return line + "NONE: the answer cites no document"
    line += one_line(", ".join(cited), width) if cited else "no document shown"
    if invented:
        line += f"  INVENTED: {one_line(', '.join(invented), width)}"
    return line


def _ids(value: Any) -> list[str]:
    """The ids of a citations event as a trace file holds them (a list), each as text; a
    value of another kind (a file written by hand) as one id."""
    if isinstance(value, list):
        return [str(each) for each in value]
    return [] if value is None else [str(value)]


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
    while isinstance(value, dict) and len(value) == 1:  # a loop: single keys may nest deep
        value = next(iter(value.values()))
    if isinstance(value, str):
        return value
    if value and _is_messages(value):
        value = value[-1]
    if _is_message(value):
        calls = value.get("tool_calls") or []
        names = [c.get("function", {}).get("name", "?") for c in calls if isinstance(c, dict)]
        content = value.get("content") or ""
        return f"{content} [calls {', '.join(names)}]".strip() if names else str(content)
    return json.dumps(value, ensure_ascii=False, default=str)


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value and "content" in value


def _is_messages(value: Any) -> bool:
    return isinstance(value, list) and all(_is_message(v) for v in value)
