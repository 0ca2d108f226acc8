"""A trace as one self-contained HTML page: a timeline of runs, each a bar at its start with
its duration, nested under its parent, colored by kind, its details shown on click (or at
once for the run whose id is the page's #fragment).

The page loads nothing: its style, its script and the runs (as JSON) are all inline. The
script lays the bars out and writes `data-run-id`, `data-parent-id` and `data-depth` on each,
so a browser's DOM shows that it ran; each run's `div.run` holds those of its children.
Text is set with `textContent`, never parsed as HTML.
"""

from __future__ import annotations

import html
import json
from typing import Any

from chainkit.callbacks.trace_view import TraceRun


def render_html(roots: list[TraceRun], title: str = "chainkit trace") -> str:
    """The page for the runs under `roots`."""
    rows: list[dict[str, Any]] = []
    ordered = _walk(roots, 0, [])
    origin = min((run.start for run, _ in ordered), default=0.0)
    for run, depth in ordered:
        rows.append(
            {
                "id": run.id,
                "parent_id": run.parent_id,
                "kind": run.kind,
                "name": run.name,
                "depth": depth,
                "start_ms": (run.start - origin) * 1000,
                "duration_ms": None if run.duration is None else run.duration * 1000,
                "input_tokens": run.input_tokens,
                "output_tokens": run.output_tokens,
                "inputs": run.inputs,
                "outputs": run.outputs,
                "error": run.error,
            }
        )
    # Inside <script>, "<" escaped: no text in a run can close the element or open a comment.
    data = json.dumps(rows, ensure_ascii=False, default=str).replace("<", "\\u003c")
    page = _PAGE.replace("__TITLE__", html.escape(title, quote=False))
    return page.replace("__DATA__", data)


def _walk(
    runs: list[TraceRun], depth: int, into: list[tuple[TraceRun, int]]
) -> list[tuple[TraceRun, int]]:
    for run in runs:
        into.append((run, depth))
        _walk(run.children, depth + 1, into)
    return into


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>__TITLE__</title>
<style>
body { font: 13px system-ui, sans-serif; margin: 0; color: #222; }
header { padding: 8px 12px; background: #f4f4f6; border-bottom: 1px solid #ddd; }
#legend span { display: inline-block; margin-right: 12px; }
#legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
main { display: flex; height: calc(100vh - 40px); }
#timeline { flex: 3; overflow: auto; padding: 8px 12px; }
#details { flex: 2; overflow: auto; padding: 8px 12px; border-left: 1px solid #ddd;
  white-space: pre-wrap; font: 12px ui-monospace, monospace; }
.row { display: flex; align-items: center; height: 22px; cursor: pointer; }
.row:hover, .row.selected { background: #eef3ff; }
.label { width: 32%; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }
.track { position: relative; flex: 1; height: 14px; }
.bar { position: absolute; height: 14px; min-width: 2px; border-radius: 2px; }
.bar.error { outline: 2px solid #d00; }
.chain { background: #6a8fd8; } .llm { background: #e0a03c; }
.tool { background: #4caf7d; } .retriever { background: #a070c8; }
.err { color: #d00; font-weight: bold; }
</style></head>
<body>
<header><b>__TITLE__</b> <span id="summary"></span> <span id="legend"></span></header>
<main><div id="timeline"></div><div id="details">Click a run to see its details.</div></main>
<script type="application/json" id="trace-data">__DATA__</script>
<script>
"use strict";
const runs = JSON.parse(document.getElementById("trace-data").textContent);
const timeline = document.getElementById("timeline");
const details = document.getElementById("details");
let end = 0;
for (const run of runs) {
  end = Math.max(end, run.start_ms + (run.duration_ms === null ? 0 : run.duration_ms));
}
const span = end > 0 ? end : 1;
function ms(value) {
  return value === null ? "unfinished" :
    value < 1000 ? value.toFixed(1) + " ms" : (value / 1000).toFixed(2) + " s";
}
for (const kind of ["chain", "llm", "tool", "retriever"]) {
  const item = document.createElement("span");
  const swatch = document.createElement("i");
  swatch.className = kind;
  item.append(swatch, kind);
  document.getElementById("legend").append(item);
}
document.getElementById("summary").textContent =
  runs.length + " runs, " + ms(end) + " in all";
function show(run, row) {
  for (const other of timeline.querySelectorAll(".row.selected")) {
    other.classList.remove("selected");
  }
  row.classList.add("selected");
  const shown = {kind: run.kind, name: run.name, id: run.id, parent_id: run.parent_id,
    start: ms(run.start_ms), duration: ms(run.duration_ms)};
  if (run.input_tokens !== null) shown.input_tokens = run.input_tokens;
  if (run.output_tokens !== null) shown.output_tokens = run.output_tokens;
  if (run.error !== null) shown.error = run.error;
  shown.inputs = run.inputs;
  shown.outputs = run.outputs;
  details.textContent = JSON.stringify(shown, null, 2);
}
// Runs come parent first: each goes into the box of its parent's children.
const boxes = new Map();
for (const run of runs) {
  const group = document.createElement("div");
  group.className = "run";
  group.dataset.runId = run.id;
  const kids = document.createElement("div");
  kids.className = "children";
  boxes.set(run.id, kids);
  const row = document.createElement("div");
  row.className = "row";
  const label = document.createElement("div");
  label.className = "label";
  label.style.paddingLeft = (run.depth * 14) + "px";
  label.textContent = run.kind + " " + run.name + " (" + ms(run.duration_ms) + ")";
  if (run.error !== null) {
    const mark = document.createElement("span");
    mark.className = "err";
    mark.textContent = " ERROR";
    label.append(mark);
  }
  label.title = label.textContent;
  const track = document.createElement("div");
  track.className = "track";
  const bar = document.createElement("div");
  bar.className = "bar " + run.kind + (run.error !== null ? " error" : "");
  bar.dataset.runId = run.id;
  bar.dataset.parentId = run.parent_id === null ? "" : run.parent_id;
  bar.dataset.depth = String(run.depth);
  bar.dataset.kind = run.kind;
  const duration = run.duration_ms === null ? end - run.start_ms : run.duration_ms;
  bar.style.left = (100 * run.start_ms / span) + "%";
  bar.style.width = (100 * duration / span) + "%";
  bar.title = run.name + ": " + ms(run.duration_ms);
  track.append(bar);
  row.append(label, track);
  row.addEventListener("click", () => show(run, row));
  group.append(row, kids);
  (boxes.get(run.parent_id) || timeline).append(group);
  if (location.hash === "#" + encodeURIComponent(run.id)) show(run, row);
}
document.body.dataset.laidOut = String(runs.length);
</script>
</body></html>
"""
