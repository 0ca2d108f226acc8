"""A trace as one self-contained HTML page: each root run with its totals and its own time
axis, its runs as a collapsible tree of bars colored by kind, a search box and filters, and
the selected run's details (a model run's prompt as a chat, with the part it shares with the
previous model call collapsed) beside it; the page's #fragment is the selected run's id.

The Python side builds the data; the page's script (trace_page/page.js, with page.css and
page.html, package data) renders it. The page loads nothing: style, script and runs (as JSON
in a non-executing script element, every `<` and non-ASCII character escaped) are inline,
and a Content-Security-Policy forbids any fetch. The script sets text with `textContent`,
never parsed as HTML, and shows invisible and bidirectional control characters as escapes.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from typing import Any

from chainkit._text import visible
from chainkit.callbacks.trace_view import PromptDiff, TraceRun, prompt_diffs, walk

_PLACEHOLDER = re.compile(r"__(TITLE|STYLE|SCRIPT|DATA)__")


def render_html(roots: list[TraceRun], title: str = "chainkit trace") -> str:
    """The page for the runs under `roots`."""
    diffs = prompt_diffs(roots)
    data = {
        "title": title,
        "roots": [_summary(root) for root in roots],
        "runs": [
            _row(run, depth, index, root.start, diffs.get(run.id))
            for index, root in enumerate(roots)
            for run, depth in walk([root])
        ],
    }
    # ensure_ascii: no character of a run reaches the page raw (nor a lone surrogate, which
    # UTF-8 cannot write); "<" escaped: no text can close the script element or open a comment.
    text = json.dumps(data, ensure_ascii=True, default=str).replace("<", "\\u003c")
    page = _asset("page.html")
    values = {
        "TITLE": html.escape(visible(title)),  # no markup in a <title>: escapes instead
        "STYLE": _asset("page.css"),
        "SCRIPT": _asset("page.js"),
        "DATA": text,
    }
    # One pass: a value that holds a placeholder's name is never replaced in turn.
    return _PLACEHOLDER.sub(lambda match: values[match[1]], page)


def _asset(name: str) -> str:
    return (resources.files(__package__) / "trace_page" / name).read_text(encoding="utf-8")


def _row(
    run: TraceRun, depth: int, root: int, origin: float, diff: PromptDiff | None
) -> dict[str, Any]:
    return {
        "id": run.id,
        "parent_id": run.parent_id,
        "root": root,
        "kind": run.kind,
        "name": run.name,
        "depth": depth,
        "children": len(run.children),
        "start_ms": (run.start - origin) * 1000,
        "duration_ms": _ms(run.duration),
        "first_token_ms": _ms(run.time_to_first_token),
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "model": run.model,
        "options": run.options,
        "inputs": run.inputs,
        "outputs": run.outputs,
        "error": run.error,
        "retries": run.retries,
        "approval": run.approval,
        "citations": run.citations,
        "prompt_shared": None if diff is None else [diff.shared_messages, diff.shared_chars],
    }


def _summary(root: TraceRun) -> dict[str, Any]:
    """A root's totals: its time, tokens, model and tool calls, errors and retries."""
    runs = [run for run, _ in walk([root])]
    ends = [run.end for run in runs if run.end is not None]
    return {
        "id": root.id,
        "name": root.name,
        "start": root.start,
        "duration_ms": _ms(root.duration),
        "span_ms": max(max(ends, default=root.start) - root.start, 0.0) * 1000,
        "runs": len(runs),
        "input_tokens": sum(run.input_tokens or 0 for run in runs),
        "output_tokens": sum(run.output_tokens or 0 for run in runs),
        "model_calls": sum(run.kind == "llm" for run in runs),
        "tool_calls": sum(run.kind == "tool" for run in runs),
        "errors": sum(run.error is not None for run in runs),
        "retries": sum(len(run.retries) for run in runs),
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000
