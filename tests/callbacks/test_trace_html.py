"""The HTML trace of a real run, opened in headless Chromium: one bar per run, nested right."""

from __future__ import annotations

import os
import shutil
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
from tests.support.stub_chains import InputOutputChain

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="chromium is not installed (CI installs it: .ci/run)",
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
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
