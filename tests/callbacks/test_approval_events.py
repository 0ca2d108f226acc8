"""A person's decisions on tool calls, as everything that watches a run shows them: LogHandler's
lines, the tool span's OpenTelemetry event, `chainkit trace`'s tree and the HTML page."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from chainkit import agents, callbacks, chains
from chainkit._cli.entry_point import main
from chainkit.callbacks.trace_view import TraceRun, format_tree, read_trace
from tests.support.approvals import Payments, tool_calling
from tests.support.chromium import Chromium
from tests.support.otel import exporter_and_provider

CALLS = [
    ("pay", {"to": "ann", "amount": 5}),
    ("pay", {"to": "bob", "amount": 900}),
    ("pay", {"to": "dee", "amount": 70}),
]
DECISIONS: dict[str | None, agents.Approve | agents.Deny | agents.Edit] = {
    "call-0": agents.Approve(),
    "call-1": agents.Deny("over the limit"),
    "call-2": agents.Edit({"to": "dee", "amount": 7}),
}


def decided_executor() -> agents.Executor:
    agent = tool_calling(Payments(), *CALLS)
    return agents.Executor(agent, approve=lambda request: DECISIONS[request.tool_call_id])


@pytest.mark.timeout(60)
def test_the_log_shows_each_request_and_decision_under_its_tool():
    stream = io.StringIO()
    chains.run(decided_executor(), "pay them", callbacks=callbacks.LogHandler(stream))
    lines = [line for line in stream.getvalue().splitlines() if "approval" in line]
    shown = sorted(re.sub(r"^\[chainkit\] [0-9a-f]+ +", "", line) for line in lines)
    assert shown == sorted(
        [
            """approval required: pay (for call-0) input='{"to": "ann", "amount": 5}'""",
            "approval decided: pay (for call-0) approve",
            """approval required: pay (for call-1) input='{"to": "bob", "amount": 900}'""",
            "approval decided: pay (for call-1) deny reason='over the limit'",
            """approval required: pay (for call-2) input='{"to": "dee", "amount": 70}'""",
            """approval decided: pay (for call-2) edit input='{"to": "dee", "amount": 7}'""",
        ]
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize("capture", [False, True], ids=["no-content", "content"])
def test_a_decision_is_an_event_of_the_tool_span(capture: bool):
    exporter, provider = exporter_and_provider()
    handler = callbacks.OpenTelemetryHandler(provider, capture_content=capture)
    chains.run(decided_executor(), "pay them", callbacks=handler)
    tool_spans = [span for span in exporter.get_finished_spans() if span.name == "execute_tool pay"]
    events = {}
    for span in tool_spans:
        [event] = span.events
        assert event.name == "approval_decided"
        attributes = dict(event.attributes or {})
        events[attributes.pop("gen_ai.tool.call.id")] = attributes
    if not capture:
        assert events == {
            "call-0": {"chainkit.approval.decision": "approve"},
            "call-1": {"chainkit.approval.decision": "deny"},
            "call-2": {"chainkit.approval.decision": "edit"},
        }
    else:
        assert events["call-1"]["chainkit.approval.reason"] == "over the limit"
        assert events["call-2"]["chainkit.approval.arguments"] == '{"to": "dee", "amount": 7}'


def traced(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(path) as trace:
        chains.run(decided_executor(), "pay them", callbacks=trace)
    return path


@pytest.mark.timeout(60)
def test_the_trace_tree_marks_each_decision_under_its_tool_run(tmp_path, capsys):
    path = traced(tmp_path)
    tree = format_tree(read_trace(path)).splitlines()
    marks = [
        (tree[i - 1].split("  in: ")[1], line) for i, line in enumerate(tree) if "APPROVAL" in line
    ]
    assert sorted(marks) == [
        ('{"to": "ann", "amount": 5}  out: paid 5 to ann', "    APPROVAL approved"),
        (
            '{"to": "bob", "amount": 900}  out: Call denied by the user; pay did not run: over '
            "the limit",
            "    APPROVAL DENIED: over the limit",
        ),
        (
            '{"to": "dee", "amount": 70}  out: paid 7 to dee',
            '    APPROVAL edited  to: {"to": "dee", "amount": 7}',
        ),
    ]
    assert main(["trace", str(path)]) == 0
    assert "    APPROVAL DENIED: over the limit" in capsys.readouterr().out


@pytest.mark.timeout(60)
def test_a_call_still_waiting_is_marked_so(tmp_path):
    path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(path) as trace, pytest.raises(RuntimeError, match="person left"):
        chains.run(
            agents.Executor(tool_calling(Payments(), CALLS[0]), approve=_leaves),
            "pay",
            callbacks=trace,
        )
    tree = format_tree(read_trace(path))
    assert "    APPROVAL required, not decided" in tree


def _leaves(request: agents.ApprovalRequest) -> agents.Approve:
    raise RuntimeError("the person left")


DETAILS = r"""(() => {
  const details = document.getElementById("details");
  const approval = [...details.querySelectorAll("section")].find(
    (section) => section.querySelector("h3").textContent === "Approval");
  return {
    marks: [...document.querySelectorAll(".label .approval")].map(
      (mark) => [mark.className, mark.textContent]),
    facts: Object.fromEntries([...approval.querySelectorAll("table.facts tr")].map(
      (row) => [row.cells[0].textContent, row.cells[1].textContent])),
    edited: approval.querySelector("pre") ? approval.querySelector("pre").textContent : null,
  };
})()"""


@pytest.mark.timeout(240, method="thread")
def test_the_page_marks_decided_tool_runs_and_details_the_decision(tmp_path):
    path = traced(tmp_path)
    page = tmp_path / "run.html"
    assert main(["trace", str(path), "--html", str(page)]) == 0
    runs = {run.inputs: run.id for run in _tool_runs(path)}
    denied = runs['{"to": "bob", "amount": 900}']
    edited = runs['{"to": "dee", "amount": 70}']
    with Chromium(tmp_path / "profile") as browser:
        browser.open(f"{page.as_uri()}#{denied}")
        on_denied = browser.evaluate(DETAILS)
        browser.open(f"{page.as_uri()}#{edited}")
        on_edited = browser.evaluate(DETAILS)
    assert sorted(on_denied["marks"]) == [
        ["approval approved", " ✓ approved"],
        ["approval denied", " ✗ denied"],
        ["approval edited", " ✎ edited"],
    ]
    assert on_denied["facts"] == {"decision": "✗ denied", "reason": "over the limit"}
    assert on_denied["edited"] is None
    assert on_edited["facts"] == {"decision": "✎ edited"}
    assert on_edited["edited"] == '{"to": "dee", "amount": 7}'


def _tool_runs(path: Path) -> list[TraceRun]:
    found: list[TraceRun] = []
    pending = read_trace(path)
    while pending:
        run = pending.pop()
        pending.extend(run.children)
        if run.kind == "tool":
            found.append(run)
    return found
