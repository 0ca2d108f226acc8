"""TraceFile writes every event as a JSON line; `chainkit trace` reads it back as a tree."""

from __future__ import annotations

import io
import json
import logging
import threading
from typing import Any

import pytest

from chainkit import agents, callbacks, chains, llms, tools
from chainkit._cli.entry_point import main
from chainkit.callbacks.errors import TraceFormatError
from chainkit.callbacks.trace_view import format_tree, read_trace
from chainkit.llms import FakeLLM, OpenAI
from chainkit.schema import Message, TokenUsage
from chainkit.schema.message import ResponseMeta
from tests.support.openai_server import TEST_API_KEY, OpenAIServer, Reply
from tests.support.retried_stream import (
    ANSWER,
    STREAMED_BEFORE_THE_BREAK,
    break_then_answer,
    mrkl_executor,
)
from tests.support.stub_chains import InputOutputChain

FINAL = f"Final Answer: {ANSWER}"

KEY = "sk-abcdefghijklmnopqrstuvwxyz123456"


class Broken(tools.Tool):
    name = "broken"
    description = "fails"

    def call(self, input: str) -> str:
        raise tools.ToolError("no luck\nsecond line")


def mrkl_run(trace: callbacks.TraceFile, question: str = "what is 6*7?") -> str:
    replies: list[str | Message] = [
        Message.assistant(
            "Thought: use it\nAction: calculator\nAction Input: 6*7",
            response_meta=ResponseMeta("stop", TokenUsage(120, 15, 135)),
        ),
        "Thought: try the other\nAction: broken\nAction Input: x",
        "Thought: done\nFinal Answer: 42",
    ]
    agent = agents.OneShotAgent(FakeLLM(replies), [tools.Calculator(), Broken()])
    return chains.run(agents.Executor(agent), question, callbacks=trace)


def lines(path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_event_is_one_json_line_with_its_run(tmp_path):
    path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(path) as trace:
        assert mrkl_run(trace) == "42"
    events = lines(path)
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "chain_start" and kinds[-1] == "chain_end"
    assert kinds.count("llm_start") == kinds.count("llm_end") == 3
    assert kinds.count("tool_start") == 2 and "tool_end" in kinds and "tool_error" in kinds
    assert "agent_action" in kinds and "agent_finish" in kinds
    root = events[0]["run_id"]
    assert events[0]["parent_id"] is None and events[0]["name"] == "Executor"
    assert all(e["parent_id"] == root for e in events if e["kind"] in ("llm_start", "tool_start"))
    tool_end = next(e for e in events if e["kind"] == "tool_end")
    assert tool_end["data"] == {"output": "42", "tool_call_id": None}
    assert tool_end["run_kind"] == "tool"
    llm_end = next(e for e in events if e["kind"] == "llm_end")
    assert llm_end["data"]["message"]["response_meta"]["usage"]["prompt_tokens"] == 120
    error = next(e for e in events if e["kind"] == "tool_error")
    assert error["data"]["error"]["type"] == "ToolError"
    assert events[-1]["data"] == {"outputs": {"output": "42"}}
    times = [e["time"] for e in events]
    assert times == sorted(times)


def test_api_keys_never_reach_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(path) as trace:
        llm = FakeLLM([f"the key is {KEY}"] * 2)
        chains.run(
            chains.LLMChain(chains_prompt(), llm),
            f"use {KEY}",
            callbacks=trace,
        )
        llm.generate(
            [Message.user("q")],
            callbacks=trace,
            extra_body={"api_key": KEY},
            extra_headers={"Authorization": f"Bearer {KEY}"},
        )
    text = path.read_text()
    assert KEY not in text and KEY[:12] not in text
    assert "sk-a***" in text and "extra_headers" in text


def chains_prompt():
    from chainkit.prompts import PromptTemplate

    return PromptTemplate.from_template("{question}")


@pytest.mark.timeout(60)
def test_concurrent_runs_write_whole_lines(tmp_path):
    path = tmp_path / "run.jsonl"
    big = "x" * 200_000  # far more than one write of a buffered file
    with callbacks.TraceFile(path) as trace:
        chain = chains.LLMChain(chains_prompt(), FakeLLM([big] * 16, chunk_size=50_000))
        threads = [
            threading.Thread(target=chains.run, args=(chain, f"q{i}"), kwargs={"callbacks": trace})
            for i in range(16)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    events = lines(path)  # every line parses
    assert sum(e["kind"] == "chain_end" for e in events) == 16
    roots = read_trace(path)
    assert len(roots) == 16 and all(len(root.children) == 1 for root in roots)


def test_a_value_json_cannot_hold_is_written_in_its_place_and_the_rest_kept(tmp_path):
    path = tmp_path / "run.jsonl"
    loop: list[object] = []
    loop.append(loop)
    inputs: dict[Any, Any] = {"input": loop, ("tuple", "pair"): float("nan")}
    with callbacks.TraceFile(path) as trace:
        chains.call(EchoChain(), inputs, callbacks=trace)
    start = lines(path)[0]
    assert start["kind"] == "chain_start"
    assert start["data"] == {"inputs": {"input": ["<cycle>"], "('tuple', 'pair')": "nan"}}


class EchoChain(InputOutputChain):
    def _call(self, inputs, **options):
        return {"output": "echo"}


def test_trace_file_refuses_what_is_no_path():
    with pytest.raises(callbacks.errors.HandlerTypeError, match="file path"):
        callbacks.TraceFile(3)  # type: ignore[arg-type]


def test_tree_shows_kind_name_tokens_first_lines_and_errors(tmp_path):
    path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(path) as trace:
        mrkl_run(trace, "first line\nsecond line")
    tree = format_tree(read_trace(path)).splitlines()
    assert tree[0].startswith("chain Executor (") and "in: first line" in tree[0]
    assert "second line" not in tree[0] and tree[0].endswith("out: 42")
    assert tree[1].startswith("  llm FakeLLM (") and "120+15 tokens" in tree[1]
    assert tree[2].startswith("  tool calculator (") and tree[2].endswith("in: 6*7  out: 42")
    assert "  tool broken (" in tree[4] and "ERROR ToolError: no luck" in tree[4]
    assert "second line" not in tree[4]
    assert len(tree) == 6


def test_chainkit_trace_prints_the_tree_and_names_bad_files(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    assert main(["run", "--trace", str(path), "What is 12 * 7?"]) == 0
    assert capsys.readouterr().out.strip() == "84"
    assert main(["trace", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("chain Executor (") and "\n  tool calculator (" in out
    path.write_text(path.read_text() + "{not json\n")
    assert main(["trace", str(path)]) == 1
    assert f"{path} line" in capsys.readouterr().err
    assert main(["trace", str(tmp_path / "missing.jsonl")]) == 1
    assert "missing.jsonl" in capsys.readouterr().err


@pytest.mark.parametrize("line", ["[]", '{"kind": "chain_start"}', '"text"'])
def test_a_line_that_is_no_event_is_named(tmp_path, line):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n" + line + "\n")
    with pytest.raises(TraceFormatError, match="line 2 is not a trace event"):
        read_trace(path)


def test_html_page_is_self_contained_and_escapes_run_text(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(path) as trace:
        mrkl_run(trace, "</script><script>alert(1)</script><!--")
    page = tmp_path / "run.html"
    assert main(["trace", str(path), "--html", str(page)]) == 0
    html = page.read_text()
    assert "<script src" not in html and "http://" not in html and "https://" not in html
    assert "alert(1)</script>" not in html and html.count("</script>") == 2
    assert "\\u003c/script>\\u003cscript>alert(1)" in html


class Loud(tools.Tool):
    name = "loud"
    description = "answers in colour"

    def call(self, input: str) -> str:
        return "\x1b[31mred\x1b[0m\u202eevil"


def test_the_tree_escapes_what_would_restyle_the_terminal_and_marks_unfinished_runs(tmp_path):
    path = tmp_path / "run.jsonl"
    llm = FakeLLM(["Action: loud\nAction Input: x", "Final Answer: done"])
    with callbacks.TraceFile(path) as trace:
        chains.run(agents.Executor(agents.OneShotAgent(llm, [Loud()])), "q", callbacks=trace)
    tree = format_tree(read_trace(path))
    assert "\x1b" not in tree and "\u202e" not in tree
    assert "out: \\x1b[31mred\\x1b[0m\\u202eevil" in tree
    # A run that never ended (its process died) is shown as such, its children still under it.
    lines_ = path.read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(line for line in lines_ if '"chain_end"' not in line) + "\n")
    cut_tree = format_tree(read_trace(cut)).splitlines()
    assert cut_tree[0].startswith("chain Executor (unfinished)") and len(cut_tree) == 4


def test_events_after_close_are_dropped(tmp_path):
    path = tmp_path / "run.jsonl"
    trace = callbacks.TraceFile(path)
    trace.close()
    chains.call(EchoChain(), {"input": "x"}, callbacks=trace)
    assert path.read_text() == ""


@pytest.mark.timeout(60)
def test_a_key_the_model_streams_in_pieces_is_masked_in_the_joined_token_lines(
    tmp_path, openai_server, make_openai
):
    configured = "azure-1c4e7a9f2b5d8e0a3c6f"  # a key that looks like none
    reply = (
        f"Keys: {TEST_API_KEY} and {configured}, then Authorization: Bearer {configured}\n"
        f"and one at the very end {TEST_API_KEY}"
    )
    openai_server.push(Reply(reply, chunk_size=3))
    path, log = tmp_path / "run.jsonl", io.StringIO()
    streamed: list[str] = []
    with callbacks.TraceFile(path) as trace:
        answer = llms.call(
            make_openai(api_key=configured),
            "q",
            streaming_func=streamed.append,
            callbacks=[trace, callbacks.LogHandler(log)],
        )
    assert answer == reply and len(streamed) > 50  # the caller's own text is whole
    events = lines(path)
    tokens = [e for e in events if e["kind"] == "token"]
    joined = "".join(e["data"]["text"] for e in tokens)
    assert 1 < len(tokens) <= len(streamed) and events[-1]["kind"] == "llm_end"
    for written in (joined, path.read_text(), log.getvalue()):
        assert configured[5:] not in written and TEST_API_KEY[8:] not in written
    assert joined == (
        "Keys: sk-l*** and azur***, then Authorization: ***\nand one at the very end sk-l***"
    )


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path, caplog, capsys):
    path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(path) as trace:
        mrkl_run(trace)
    whole = format_tree(read_trace(path))
    cut_at = len(path.read_bytes())
    with callbacks.TraceFile(path) as trace:
        chains.run(EchoChain(), "€uro", callbacks=trace)
    torn = path.read_bytes()
    torn_line = len(torn[:cut_at].splitlines()) + 1
    path.write_bytes(torn[: torn.index("€".encode(), cut_at) + 1])  # a crash amid a "€"
    with caplog.at_level(logging.WARNING, logger="chainkit"):
        assert format_tree(read_trace(path)) == whole
    assert [r.getMessage() for r in caplog.records] == [
        f"{path} line {torn_line} is cut short: skipped it"
    ]
    assert main(["trace", str(path)]) == 0
    assert capsys.readouterr() == (
        whole + "\n",
        f"chainkit trace: warning: {path} line {torn_line} is cut short: skipped it\n",
    )


def test_lone_surrogates_and_bytes_are_written_escaped_and_read_back(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    name = "report\udcff.pdf"  # a file name that was not UTF-8, as os.listdir gives it
    with callbacks.TraceFile(path) as trace:
        chains.call(BytesChain(), {"input": name}, callbacks=trace)
    start, end = lines(path)
    assert start["data"]["inputs"] == {"input": name}
    assert end["data"]["outputs"] == {"output": repr(b"\xff\xfe")}
    assert "\\udcff" in path.read_text(encoding="utf-8")
    assert main(["trace", str(path)]) == 0
    assert "in: report\\udcff.pdf" in capsys.readouterr().out
    page = tmp_path / "run.html"
    assert main(["trace", str(path), "--html", str(page)]) == 0
    assert "report\\udcff.pdf" in page.read_text(encoding="utf-8")  # as the script's escape


class BytesChain(InputOutputChain):
    def _call(self, inputs, **options):
        return {"output": b"\xff\xfe"}


def test_a_log_file_gets_lone_surrogates_escaped(tmp_path):
    path = tmp_path / "log.txt"
    with open(path, "w", encoding="utf-8") as stream:
        callbacks.LogHandler(stream).handle_text("report\udcff.pdf")
    assert path.read_text(encoding="utf-8") == "[chainkit] text: report\\udcff.pdf\n"


NOT_TRACES = {
    "empty": b"",
    "blank": b"\n\n",
    "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "text": b"hello world\n",
    "json_list": b"[1, 2]\n",
    "torn_in_the_middle": b'{"kind": "chain_st\n{"kind": 1}\n',
    "bad_parent": b'{"kind": "chain_start", "run_id": "a", "parent_id": [], "run_kind": "chain",'
    b' "name": "n", "time": 1, "data": {}}\n',
    "nan_time": b'{"kind": "chain_start", "run_id": "a", "parent_id": null, "run_kind": "chain",'
    b' "name": "n", "time": NaN, "data": {}}\n',
}


@pytest.mark.parametrize("content", NOT_TRACES.values(), ids=NOT_TRACES.keys())
@pytest.mark.parametrize("html", [False, True])
def test_what_is_no_trace_gets_one_line_of_error(tmp_path, capsys, content, html):
    path = tmp_path / "file.jsonl"
    path.write_bytes(content)
    page = tmp_path / "page.html"
    assert main(["trace", str(path), *(["--html", str(page)] if html else [])]) == 1
    out, err = capsys.readouterr()
    assert out == "" and not page.exists()
    assert err.count("\n") == 1 and err.startswith(f"chainkit trace: error: {path}")


def test_a_directory_gets_one_line_of_error(tmp_path, capsys):
    assert main(["trace", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("chainkit trace: error: ")


def test_a_retry_is_a_line_of_the_trace_and_a_marker_in_the_tree(
    tmp_path, openai_server: OpenAIServer, openai_llm: OpenAI
):
    path = tmp_path / "run.jsonl"
    break_then_answer(openai_server)
    with callbacks.TraceFile(path) as trace:
        for _ in chains.stream(mrkl_executor(openai_llm), "q", callbacks=trace):
            pass
    [llm_run] = {e["run_id"] for e in lines(path) if e["run_kind"] == "llm"}
    [retry] = [e for e in lines(path) if e["kind"] == "retry"]
    assert retry["run_id"] == llm_run
    assert retry["data"]["attempt"] == 1
    assert retry["data"]["error"]["type"] == "ModelConnectionError"
    assert retry["data"]["wait"] == pytest.approx(0.001, abs=0.01)  # the tests' fast backoff
    assert retry["data"]["discarded"] == STREAMED_BEFORE_THE_BREAK
    tree = format_tree(read_trace(path)).splitlines()
    assert tree[1].startswith("  llm loopback-model (") and tree[1].endswith(f"out: {FINAL}")
    assert tree[2].startswith("    RETRY after attempt 1: ModelConnectionError: ")
    assert tree[2].endswith(f"  discarded: {STREAMED_BEFORE_THE_BREAK.strip()}")
    assert len(tree) == 3
