"""What each model run's prompt added to the one before it, in the tree `chainkit trace` prints
(the page shows the same diff: tests/callbacks/test_trace_html.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chainkit import callbacks
from chainkit._cli.entry_point import main
from chainkit.callbacks.trace_html import render_html
from chainkit.callbacks.trace_view import PromptDiff, format_tree, prompt_diff, read_trace
from tests.callbacks.test_trace_file import mrkl_run
from tests.support.trace_events import TraceWriter, tool_calling_agent

SYSTEM = {"role": "system", "content": "Be brief."}
QUESTION = {"role": "user", "content": "What is 6*7?"}
CALL = {"role": "assistant", "content": None, "tool_calls": [{"id": "c0"}]}
RESULT = {"role": "tool", "content": "42", "tool_call_id": "c0"}


def test_appended_messages_are_what_a_prompt_adds():
    diff = prompt_diff([SYSTEM, QUESTION], [SYSTEM, QUESTION, CALL, RESULT])
    assert diff == PromptDiff(2, 0, [CALL, RESULT])
    assert prompt_diff([SYSTEM, QUESTION, CALL], [SYSTEM, QUESTION, CALL]) == PromptDiff(3, 0, [])


def test_a_message_that_grew_adds_its_new_lines_from_the_line_that_differs():
    before = [SYSTEM, {"role": "user", "content": "Question: q\nThought:"}]
    after = [SYSTEM, {"role": "user", "content": "Question: q\nThought: go\nObservation: 1\n"}]
    diff = prompt_diff(before, after)
    assert diff == PromptDiff(1, 12, [{"role": "user", "content": "Thought: go\nObservation: 1\n"}])


def test_prompts_that_share_nothing_or_are_no_messages_have_no_diff():
    assert prompt_diff([QUESTION], [{"role": "user", "content": "Something else"}]) is None
    assert prompt_diff([SYSTEM], [{"role": "user", "content": "Be brief."}]) is None
    assert prompt_diff("a prompt", "a prompt, longer") is None
    assert prompt_diff(None, [QUESTION]) is None


def test_the_tree_shows_what_each_mrkl_step_added_not_the_same_first_line(tmp_path):
    path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(path) as trace:
        mrkl_run(trace)
    tree = format_tree(read_trace(path), width=200).splitlines()
    assert "  in: Answer the following questions" in tree[1]
    step = "Thought: use it\\nAction: calculator\\nAction Input: 6*7\\nObservation: 42\\nThought:"
    assert tree[3].startswith("  llm FakeLLM (") and f"  added: Thought:{step}  out:" in tree[3]
    assert "Observation: no luck\\nsecond line\\nThought:  out: Thought: done" in tree[5]
    assert "Answer the following" not in tree[3] + tree[5]


def test_the_tree_shows_the_messages_a_tool_calling_step_added(tmp_path):
    trace = TraceWriter()
    tool_calling_agent(trace, "find k", steps=3, at=1000.0)
    tool_calling_agent(trace, "again", steps=2, at=5000.0)
    tree = format_tree(read_trace(trace.write(tmp_path / "run.jsonl"))).splitlines()
    assert "in: find k  out: [calls lookup]" in tree[1]
    assert "added: assistant: [calls lookup]\\ntool: value 0  out: [calls lookup]" in tree[3]
    assert "added: assistant: [calls lookup]\\ntool: value 1  out: Done with find k" in tree[5]
    # Each root's first model run shows its prompt: a diff never crosses from one root to the next.
    assert tree[6].startswith("chain Executor") and "in: again  out: [calls lookup]" in tree[7]


def test_a_hostile_trace_cannot_restyle_the_terminal_through_kinds_or_token_counts(tmp_path):
    trace = TraceWriter()
    run = trace.new_run(None, "llm\x1b[2J", "model")
    trace.event("llm_start", run, 1.0, messages=[QUESTION], options={}, model="m")
    usage = {"prompt_tokens": "\x1b[31m", "completion_tokens": 7}
    trace.event("llm_end", run, 2.0, message={"role": "assistant", "content": "42",
                                              "response_meta": {"usage": usage}})  # fmt: skip
    roots = read_trace(trace.write(tmp_path / "run.jsonl"))
    tree = format_tree(roots)
    assert "\x1b" not in tree and tree.startswith("llm\\x1b[2J model (1.00 s, 0+7 tokens)")
    assert "\x1b" not in render_html(roots)  # and the page's totals add up what is a count


# Hostile trace files: `chainkit trace` says what is wrong in one line, or shows them.


def one_chain(at: object, inputs: object = "x") -> TraceWriter:
    trace = TraceWriter()
    run = trace.new_run(None, "chain", "c")
    trace.event("chain_start", run, at, inputs={"input": inputs})  # type: ignore[arg-type]
    trace.event("chain_end", run, 2.0, outputs={"output": "y"})
    return trace


def trace_command(path: Path, capsys: pytest.CaptureFixture[str], *html: str) -> tuple[int, str]:
    status = main(["trace", str(path), *html])
    captured = capsys.readouterr()
    return status, captured.err


@pytest.mark.parametrize("at", [10**400, 1.7e308, -1e300], ids=["int", "float", "negative"])
def test_a_time_past_any_clock_is_named_in_one_line(tmp_path, capsys, at):
    path = one_chain(at).write(tmp_path / "run.jsonl")
    for html in ((), ("--html", str(tmp_path / "page.html"))):
        status, said = trace_command(path, capsys, *html)
        assert status == 1
        assert said == (
            f"chainkit trace: error: {path} line 1: time must be a number of seconds since the "
            "epoch, at most 1e+15 either way\n"
        )


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_data_nested_too_deep_to_read_is_named_in_one_line(tmp_path, capsys, depth):
    path = tmp_path / "run.jsonl"
    line = one_chain(1.0).events[0]
    text = json.dumps(line).replace('"x"', "[" * depth + "]" * depth)
    path.write_text(text + "\n")
    status, said = trace_command(path, capsys)
    assert status == 1
    assert said == f"chainkit trace: error: {path} line 1 nests its JSON too deeply to be read\n"


def test_data_as_deep_as_json_reads_is_shown(tmp_path, capsys):
    nested: object = "deep"
    for _ in range(200):
        nested = {"key": nested}
    path = one_chain(1.0, nested).write(tmp_path / "run.jsonl")
    assert main(["trace", str(path)]) == 0
    assert "chain c (1.00 s)  in: deep  out: y" in capsys.readouterr().out


def test_runs_nested_thousands_deep_are_shown_on_the_tree_and_the_page(tmp_path, capsys):
    trace = TraceWriter()
    parent = None
    for level in range(3_000):
        run = trace.new_run(parent, "chain", f"level{level}")
        trace.event("chain_start", run, 1.0 + level, inputs={"input": "x"})
        parent = run[0]
    path = trace.write(tmp_path / "run.jsonl")
    assert main(["trace", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3_000 and lines[-1].startswith("  " * 2_999 + "chain level2999")
    assert main(["trace", str(path), "--html", str(tmp_path / "page.html")]) == 0


def test_runs_that_are_their_own_ancestors_are_named(tmp_path, capsys):
    trace = TraceWriter()
    trace.event("chain_start", ("a", "b", "chain", "c"), 1.0, inputs={})
    trace.event("chain_start", ("b", "a", "chain", "c"), 1.0, inputs={})
    path = trace.write(tmp_path / "run.jsonl")
    status, said = trace_command(path, capsys)
    assert status == 1
    assert said == (
        f"chainkit trace: error: {path}: run 'a' is its own ancestor (following parent_id from "
        "it leads back to it)\n"
    )
