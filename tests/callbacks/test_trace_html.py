"""The HTML trace page opened in headless Chromium: one bar per run, nested right; totals per
trace; a model run's prompt as a chat with what it adds; search, filters, collapse, #run-id;
trace text shown as text, invisible characters visibly; 10,000 runs."""

from __future__ import annotations

import os
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from chainkit import callbacks, chains
from chainkit._cli.entry_point import main
from chainkit.callbacks.trace_view import TraceRun, read_trace
from tests.callbacks.test_runs import executor_and_tools
from tests.callbacks.test_trace_file import mrkl_run
from tests.support.chromium import CHROMIUM, FLAGS, Chromium
from tests.support.stub_chains import InputOutputChain
from tests.support.trace_events import TraceWriter, tool_calling_agent

pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="chromium is not installed (CI installs it: .ci/run)",
)


class Outer(InputOutputChain):
    """Runs the executor of two parallel tools inside itself: a tree three runs deep."""

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        executor, _ = executor_and_tools(parties=2)
        return {"output": chains.run(executor, inputs["input"])}


class Boxes(HTMLParser):
    """Each bar's run id and parent id, and the run ids of the `div.run` boxes around it."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[dict[str, str | None]] = []
        self.bars: list[tuple[dict[str, str | None], list[str | None]]] = []
        self.body: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":
            self.body = dict(attrs)
        if tag != "div":
            return
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if "bar" in classes:
            around = [box.get("data-run-id") for box in self.open if box.get("class") == "run"]
            self.bars.append((found, around))
        self.open.append(found)

    def handle_endtag(self, tag: str) -> None:
        if tag == "div":
            self.open.pop()


def browser(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None, "CI must have chromium: .ci/run installs it"
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    )


def all_runs(roots: list[TraceRun]) -> list[TraceRun]:
    found: list[TraceRun] = []
    for run in roots:
        found += [run, *all_runs(run.children)]
    return found


@pytest.mark.timeout(240, method="thread")
def test_the_trace_page_lays_out_one_bar_per_run_nested_under_its_parent(tmp_path):
    trace_path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(trace_path) as trace:
        assert chains.run(Outer(), "q", callbacks=trace) == "done: q"
    page = tmp_path / "run.html"
    assert main(["trace", str(trace_path), "--html", str(page)]) == 0
    runs = all_runs(read_trace(trace_path))
    assert len(runs) == 6  # Outer, Executor, 2 model calls, 2 tools

    dom = browser("--dump-dom", page.as_uri(), profile=tmp_path / "profile").stdout
    boxes = Boxes()
    boxes.feed(dom)
    assert boxes.body.get("data-laid-out") == "6"  # the page's script ran to its end
    parents = {run.id: run.parent_id for run in runs}
    kinds = {run.id: run.kind for run in runs}
    assert sorted(bar.get("data-run-id") or "" for bar, _ in boxes.bars) == sorted(parents)
    for bar, around in boxes.bars:
        run_id = bar["data-run-id"]
        assert run_id is not None
        assert bar["data-parent-id"] == (parents[run_id] or "")
        assert kinds[run_id] in (bar.get("class") or "").split()
        # The boxes around a bar are its own, its parent's, and so on up to the root.
        chain: list[str | None] = [run_id]
        while parents[chain[-1] or ""] is not None:
            chain.append(parents[chain[-1] or ""])
        assert around == list(reversed(chain))

    shot = tmp_path / "trace.png"
    size = "--window-size=1200,800"
    browser(f"--screenshot={shot}", size, page.as_uri(), profile=tmp_path / "shot-profile")
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1200, 800)


def page_of(tmp_path: Path, trace: TraceWriter, name: str = "run.jsonl") -> Path:
    """The page `chainkit trace --html` writes for the events of `trace`."""
    path = trace.write(tmp_path / name)
    page = tmp_path / "page.html"
    assert main(["trace", str(path), "--html", str(page)]) == 0
    return page


SHADY_NAME = "invoice\u202efdp.exe"  # shown raw, it reads "invoiceexe.pdf"
HOSTILE = "</script><script>window.pwned = 1</script><!-- \"q\" 'q' <b>b</b> a\u200bb\ufeff\u2066"
SEEN = r"""(() => {
  const details = document.getElementById("details");
  return {
    title: document.title,
    heading: document.getElementById("title").textContent,
    name: document.querySelector(".row .name").textContent,
    marks: [...document.querySelectorAll(".row .name .esc")].map((mark) => mark.textContent),
    details: details.textContent,
    images: document.images.length,
    scripts: document.scripts.length,
    bolds: details.querySelectorAll("b").length,
    pwned: window.pwned === undefined ? null : window.pwned,
    raw: /[\u0000-\u0008\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/.test(
      document.documentElement.textContent),
  };
})()"""


@pytest.mark.timeout(240, method="thread")
def test_trace_text_stays_text_and_invisible_characters_show_as_escapes(tmp_path):
    trace = TraceWriter()
    tool = trace.new_run(None, "tool", SHADY_NAME)
    trace.event("tool_start", tool, 1000.0, input=HOSTILE)
    trace.event("tool_end", tool, 1000.5, output="done\u200f")
    folder = tmp_path / "traces"
    folder.mkdir()
    # The file's name reaches the title: markup, a bidi override and a placeholder's name.
    page = page_of(folder, trace, name="<img src=x onerror=alert(1)>\u202egnp.__DATA__.jsonl")
    with Chromium(tmp_path / "profile") as browser:
        browser.open(f"{page.as_uri()}#{tool[0]}")
        seen = browser.evaluate(SEEN)
        browser.screenshot(tmp_path / "shady.png")
    title = f"chainkit trace {folder}/<img src=x onerror=alert(1)>\\u202egnp.__DATA__.jsonl"
    assert seen["title"] == seen["heading"] == title
    assert seen["name"] == "invoice\\u202efdp.exe" and seen["marks"] == ["\\u202e"]
    assert "</script><script>window.pwned = 1</script><!-- \"q\" 'q' <b>b</b>" in seen["details"]
    assert "a\\u200bb\\ufeff\\u2066" in seen["details"] and "done\\u200f" in seen["details"]
    assert seen["images"] == seen["bolds"] == 0 and seen["scripts"] == 2
    assert seen["pwned"] is None and seen["raw"] is False


def two_traces_an_hour_apart() -> TraceWriter:
    """run-000001: 4 model calls (the third, run-000006, retried once), 3 tools; an hour later
    run-000009: 2 model calls, the tool lookup and the tool broken (run-000013) that fails."""
    trace = TraceWriter()
    tool_calling_agent(trace, "find k", steps=4, at=1_700_000_000.0, retry_at=2)
    second = tool_calling_agent(trace, "again", steps=2, at=1_700_003_600.0)
    broken = trace.new_run(second, "tool", "broken")
    trace.event("tool_start", broken, 1_700_003_600.2, input="x")
    error = {"type": "ToolError", "message": "no luck"}
    trace.event("tool_error", broken, 1_700_003_600.3, error=error)
    return trace


TOTALS = """[...document.querySelectorAll(".trace-head")].map(
  (head) => [...head.children].map((fact) => fact.textContent))"""
BARS = """Object.fromEntries([...document.querySelectorAll(".bar")].map(
  (bar) => [bar.dataset.runId, [parseFloat(bar.style.left), parseFloat(bar.style.width)]]))"""
MODEL_RUN = r"""(() => {
  const details = document.getElementById("details");
  const shared = details.querySelector("details.shared");
  return {
    run: details.dataset.runId,
    selected: document.querySelector(".row.selected").parentElement.dataset.runId,
    facts: Object.fromEntries([...details.querySelectorAll("table.facts tr")].map(
      (row) => [row.cells[0].textContent, row.cells[1].textContent])),
    shared: [shared.querySelector("summary").textContent, shared.open,
      shared.querySelectorAll(".msg").length],
    added: [...details.querySelectorAll("section > .msg")].map((message) => message.innerText),
    reply: details.querySelector("section > .chat > .msg").innerText,
    sections: [...details.querySelectorAll("h3")].map((head) => head.textContent),
    marker: document.querySelector(".row.selected .retry").textContent,
  };
})()"""
SHOWN = """[...document.querySelectorAll(".run")].filter((group) => !group.hidden).map(
  (group) => group.dataset.runId + (group.firstChild.classList.contains("context") ? "~" : ""))"""


@pytest.mark.timeout(240, method="thread")
def test_the_page_totals_each_trace_on_its_own_time_axis_and_shows_a_model_run_as_a_chat(
    tmp_path,
):
    page = page_of(tmp_path, two_traces_an_hour_apart())
    with Chromium(tmp_path / "profile") as browser:
        browser.open(f"{page.as_uri()}#run-000006")
        totals, bars, model_run = (browser.evaluate(probe) for probe in (TOTALS, BARS, MODEL_RUN))
        browser.screenshot(tmp_path / "model-run.png")
    assert totals[0][:2] == ["Executor", "↻ 1 retry"]
    assert totals[0][4:] == ["8 runs", "640 in / 80 out tokens", "4 model calls", "3 tool calls"]
    assert totals[1][:2] == ["Executor", "1 error"]
    assert totals[1][4:] == ["5 runs", "240 in / 40 out tokens", "2 model calls", "2 tool calls"]
    # An hour apart, each root spans its own axis: neither is a sliver of a shared one.
    assert bars["run-000001"] == bars["run-000009"] == [0, 100]
    assert bars["run-000010"][1] > 40  # its 400 ms of the root's 0.93 s

    assert model_run["run"] == model_run["selected"] == "run-000006"
    facts = model_run["facts"]
    assert facts["model"] == "gpt-4o-mini" and facts["first token"] == "250.0 ms"
    assert facts["input tokens"] == "180" and facts["output tokens"] == "20"
    assert facts["temperature"] == "0" and facts["max_tokens"] == "256"
    assert facts["error"] == "APIConnectionError: connection reset" and facts["wait"] == "500.0 ms"
    assert model_run["marker"] == " ↻1"
    assert model_run["sections"] == ["Retries", "Options", "Prompt: what it adds", "Reply"]
    # Only what this prompt adds shows: the previous step's call with its arguments, and the
    # tool's result; the four messages both prompts share are collapsed.
    assert model_run["shared"] == ["4 messages as in the previous model call", False, 4]
    call, result = model_run["added"]
    assert call.split("\n") == ["ASSISTANT", "→ lookup c1", "{", '  "key": "k1"', "}"]
    assert result.split("\n") == ["TOOL RESULT OF C1", "value 1"]
    assert '"key": "k2"' in model_run["reply"]


INTERACT = """(async () => {
  const seen = {};
  const click = (selector) => document.querySelector(selector).click();
  const shown = () => __SHOWN__;
  click('.run[data-run-id="run-000011"] > .row .name');
  seen.clicked = [location.hash, document.getElementById("details").dataset.runId];
  click('.run[data-run-id="run-000001"] > .row .toggle');
  const kids = document.querySelector('.run[data-run-id="run-000001"] > .children');
  seen.collapsed = [getComputedStyle(kids).display, shown().length];
  click('.run[data-run-id="run-000001"] > .row .toggle');
  seen.expanded = getComputedStyle(kids).display;
  const search = document.getElementById("search");
  search.value = "VALUE 1";
  search.dispatchEvent(new Event("input"));
  seen.search = [shown(), document.getElementById("matches").textContent];
  search.value = "";
  const errorsOnly = document.getElementById("errors-only");
  errorsOnly.click();
  seen.errors = shown();
  errorsOnly.click();
  const kind = document.getElementById("kind-filter");
  kind.value = "tool";
  kind.dispatchEvent(new Event("change"));
  seen.tools = shown();
  kind.value = "";
  kind.dispatchEvent(new Event("change"));
  seen.all = shown().length;
  await new Promise((done) => {
    window.addEventListener("hashchange", done, {once: true});
    location.hash = "#run-000012";
  });
  seen.hash = document.getElementById("details").dataset.runId;
  return seen;
})()""".replace("__SHOWN__", SHOWN)


@pytest.mark.timeout(240, method="thread")
def test_runs_collapse_filter_and_are_selected_in_the_url(tmp_path):
    page = page_of(tmp_path, two_traces_an_hour_apart())
    with Chromium(tmp_path / "profile") as browser:
        browser.open(page.as_uri())
        seen = browser.evaluate(INTERACT)
        browser.screenshot(tmp_path / "filtered.png")
    assert seen["clicked"] == ["#run-000011", "run-000011"]
    assert seen["collapsed"] == ["none", 13] and seen["expanded"] == "block"
    # Matches, and the runs above them (dimmed) so that they show where they ran.
    assert seen["search"] == [
        ["run-000001~", "run-000005", "run-000006", "run-000008"],
        "3 of 13 runs match",
    ]
    assert seen["errors"] == ["run-000009~", "run-000013"]
    first, second = ["run-000003", "run-000005", "run-000007"], ["run-000013", "run-000011"]
    assert seen["tools"] == ["run-000001~", *first, "run-000009~", *second]  # in order of start
    assert seen["all"] == 13 and seen["hash"] == "run-000012"


PAINTED = """new Promise((done) => requestAnimationFrame(() => setTimeout(() => done({
  painted_ms: performance.now(),
  laid_out: document.body.dataset.laidOut,
}))))"""
SEARCHED = """(() => {
  const search = document.getElementById("search");
  const started = performance.now();
  search.value = "question 421";
  search.dispatchEvent(new Event("input"));
  return {ms: performance.now() - started, shown: Number(document.body.dataset.shown)};
})()"""


@pytest.mark.timeout(300, method="thread")
def test_ten_thousand_runs_open_and_stay_responsive(tmp_path):
    trace = TraceWriter()
    for number in range(500):  # 500 agent runs an hour apart, 20 runs each
        at = 1_700_000_000.0 + 3600 * number
        tool_calling_agent(trace, f"question {number}", steps=10, at=at, retry_at=number % 10)
    assert trace.count == 10_000
    page = page_of(tmp_path, trace)
    with Chromium(tmp_path / "profile") as browser:
        browser.open(page.as_uri())
        painted = browser.evaluate(PAINTED)
        searched = browser.evaluate(SEARCHED)
        png = browser.screenshot(tmp_path / "ten-thousand.png")
    # Bounds far above what it takes (about 1.5 s to the first paint of the laid out page
    # and 0.1 s per search on 2 busy cores): only a page that stalls fails.
    assert painted["laid_out"] == "10000" and painted["painted_ms"] < 60_000
    assert searched["shown"] == 11 and searched["ms"] < 10_000  # the root and its 10 model calls
    assert struct.unpack(">II", png[16:24]) == (1200, 800)


GREW = """(() => {
  const details = document.getElementById("details");
  return {
    shared: details.querySelector("details.shared").textContent,
    added: [...details.querySelectorAll("section > .msg")].map((message) => message.innerText),
  };
})()"""


@pytest.mark.timeout(240, method="thread")
def test_a_prompt_that_grew_in_place_shows_its_new_lines(tmp_path):
    trace_path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(trace_path) as trace:
        mrkl_run(trace)
    page = tmp_path / "run.html"
    assert main(["trace", str(trace_path), "--html", str(page)]) == 0
    second_model_run = [run for run in all_runs(read_trace(trace_path)) if run.kind == "llm"][1]
    with Chromium(tmp_path / "profile") as browser:
        browser.open(f"{page.as_uri()}#{second_model_run.id}")
        seen = browser.evaluate(GREW)
    # The one user message grew by the last step: its old lines are folded away.
    [added] = seen["added"]
    head, cut, *lines = added.split("\n")
    assert head == "USER" and cut.startswith("… ") and cut.endswith(" characters as before")
    assert lines[:5] == ["Thought:Thought: use it", "Action: calculator", "Action Input: 6*7",
                         "Observation: 42", "Thought:"]  # fmt: skip
    assert "Answer the following questions" in seen["shared"]
    assert "Answer the following questions" not in added
