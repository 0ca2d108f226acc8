"""What each model run's prompt added to the one before it, in the tree `chainkit trace` prints
(the page shows the same diff: tests/callbacks/test_trace_html.py)."""

from __future__ import annotations

from chainkit import callbacks
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
