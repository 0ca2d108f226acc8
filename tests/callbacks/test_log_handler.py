"""LogHandler shows what each prompt adds to the one before, and cuts long text in the middle."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainkit import agents, chains, tools
from chainkit.callbacks import LogHandler
from chainkit.llms import FakeLLM
from chainkit.schema import FunctionCall, Message, ToolCall
from chainkit.schema.message import ResponseMeta, Role
from tests.support.modes import Mode
from tests.support.stub_chains import InputOutputChain


def llm_starts(text: str) -> list[str]:
    """What each `llm start` line says, after its run's id and indent."""
    return re.findall(r"^\[chainkit\] (?:[0-9a-f]+ +)?llm start: (.*)$", text, re.MULTILINE)


def test_a_mrkl_step_shows_only_the_scratchpad_it_adds(mode: Mode) -> None:
    out = io.StringIO()
    fake = FakeLLM([" I should add.\nAction: calculator\nAction Input: 2+2", " Final Answer: 4"])
    executor = agents.Executor(
        agents.OneShotAgent(fake, [tools.Calculator()]), callbacks=LogHandler(out)
    )
    mode.run(executor, "what is 2+2?")

    first_prompt = fake.calls[0].messages[0].content
    first, second = llm_starts(out.getvalue())
    assert first.startswith("user: Answer the following questions") and "what is 2+2?" in first
    assert second == (
        f"[first {len(first_prompt):,} characters as before] I should add.\\nAction: calculator"
        "\\nAction Input: 2+2\\nObservation: 4\\nThought: "
        "options={'stop': ['\\\\nObservation:', '\\\\n\\\\tObservation:']}"
    )


def test_a_tool_calling_step_shows_only_the_messages_it_adds() -> None:
    out = io.StringIO()
    call = ToolCall("c1", FunctionCall("calculator", json.dumps({"input": "6*7"})))
    fake = FakeLLM([Message.assistant("", [call]), "42"])
    executor = agents.Executor(
        agents.ToolCallingAgent(fake, [tools.Calculator()]), callbacks=LogHandler(out)
    )
    chains.run(executor, "what is 6*7?")

    first, second = llm_starts(out.getvalue())
    assert "user: what is 6*7?" in first
    assert second.startswith(
        '[first 2 messages as before] | assistant: tool_calls: calculator({"input": "6*7"}) '
        "| tool: (for c1) 42 options="
    )


def test_prompts_that_extend_none_shown_before_are_shown_whole() -> None:
    out = io.StringIO()
    log = LogHandler(out)
    log.handle_llm_start([Message.user("Question: a\nThought:")], {})
    log.handle_llm_start([Message.user("Question: b\nThought:")], {})  # another run
    log.handle_llm_start([Message.user("Question: b\nThought:")], {})  # the same again
    log.handle_llm_start([Message.system("s"), Message.user("Question: b")], {})
    log.handle_llm_start([Message.system("s")], {})  # shorter: adds nothing, repeats part
    assert llm_starts(out.getvalue()) == [
        "user: Question: a\\nThought:",
        "user: Question: b\\nThought:",
        "[same messages as before]",
        "system: s | user: Question: b",
        "system: s",
    ]


def test_interleaved_runs_each_extend_their_own_prompt() -> None:
    out = io.StringIO()
    log = LogHandler(out)
    system = Message.system("rules")
    log.handle_llm_start([system, Message.user("Question: a\nThought:")], {})
    log.handle_llm_start([system, Message.user("Question: b\nThought:")], {})
    log.handle_llm_start([system, Message.user("Question: b\nThought: x\nObservation: 1")], {})
    log.handle_llm_start([system, Message.user("Question: a\nThought: y\nObservation: 2")], {})
    assert llm_starts(out.getvalue())[2:] == [
        "[first 1 message and 20 characters as before] x\\nObservation: 1",
        "[first 1 message and 20 characters as before] y\\nObservation: 2",
    ]


def test_a_changed_message_is_not_taken_for_a_continuation() -> None:
    out = io.StringIO()
    log = LogHandler(out)
    log.handle_llm_start([Message.user("hello")], {})
    log.handle_llm_start([Message.user("hello world", name="bob")], {})
    assert llm_starts(out.getvalue())[1] == "user: hello world"


def test_concurrent_prompts_are_all_logged_whole_lines() -> None:
    out = io.StringIO()
    log = LogHandler(out)
    prompts = [[Message.user(f"Question: {i}\nThought:")] for i in range(40)]
    threads = [threading.Thread(target=log.handle_llm_start, args=(p, {})) for p in prompts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(llm_starts(out.getvalue())) == sorted(
        f"user: Question: {i}\\nThought:" for i in range(40)
    )


def test_a_long_prompt_is_cut_in_the_middle_keeping_the_question() -> None:
    out = io.StringIO()
    log = LogHandler(out, max_chars=1000)
    prompt = "Use the tools.\n" + "tool: does things\n" * 5000 + "Question: what now?\nThought:"
    log.handle_llm_start([Message.user(prompt)], {})
    [line] = llm_starts(out.getvalue())
    assert line.startswith("user: Use the tools.\\n")
    assert line.endswith("Question: what now?\\nThought:")
    assert f"…[{len('user: ' + prompt) - 1000:,} characters cut]…" in line
    assert len(line) < 1100


def test_cutting_keeps_start_and_end_of_any_text() -> None:
    out = io.StringIO()
    LogHandler(out, max_chars=10).handle_text("0123456789" * 5 + "END")
    assert out.getvalue() == "[chainkit] text: 01234…[43 characters cut]…89END\n"


@pytest.mark.parametrize("max_chars", [-1, 1.5, "4000", True])
def test_max_chars_must_be_a_count(max_chars: object) -> None:
    with pytest.raises(ValueError, match="max_chars must be a whole number, 0 or more"):
        LogHandler(io.StringIO(), max_chars=max_chars)  # type: ignore[arg-type]


def test_the_stream_must_be_writable() -> None:
    with pytest.raises(TypeError, match="stream must be a text stream"):
        LogHandler(print)  # type: ignore[arg-type]


def test_control_characters_are_escaped_so_a_line_stays_one_line() -> None:
    out = io.StringIO()
    LogHandler(out).handle_text("a\x1b[2Jb\x07\u2028c\u202ed\x85\te")
    assert out.getvalue() == "[chainkit] text: a\\x1b[2Jb\\x07\\u2028c\\u202ed\\x85\te\n"


def escaped_by_hand(text: str) -> str:
    """What a line shows of `text`: every control character, line break and bidirectional
    override written out, one character at a time."""
    special = {"\\": "\\\\", "\n": "\\n", "\r": "\\r"}
    out = []
    for char in text:
        code = ord(char)
        if char in special:
            out.append(special[char])
        elif (code < 0x20 and char != "\t") or 0x7F <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        elif code in (0x2028, 0x2029) or 0x202A <= code < 0x202F or 0x2066 <= code < 0x206A:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


@given(st.text(alphabet=st.sampled_from("ab\\\n\r\t\x00\x1b\x7f\x85\u2028\u202e\u2067é中")))
def test_every_line_escapes_as_one_character_at_a_time_would(text: str) -> None:
    out = io.StringIO()
    LogHandler(out, max_chars=0).handle_text(text)
    assert out.getvalue() == f"[chainkit] text: {escaped_by_hand(text)}\n"


@given(
    st.text("ab\n", min_size=1, max_size=6),
    st.text("ab\n", min_size=1, max_size=6),
    st.sampled_from(["user", "assistant"]),
    st.sampled_from([None, "x"]),
)
def test_a_prompt_is_shown_as_grown_exactly_when_only_its_text_grew(
    before_text: str, added: str, role: Role, name: str | None
) -> None:
    out = io.StringIO()
    handler = LogHandler(out)
    before = Message.user(before_text)
    now = Message(role, before_text + added, name=name)
    handler.handle_llm_start([before], {})
    handler.handle_llm_start([now], {})
    grown = dataclasses.replace(now, content=before_text) == before
    shown = llm_starts(out.getvalue())[1]
    expected = f"[first {len(before_text):,} characters as before]"
    assert shown.startswith(expected) == grown, shown


def log_lines(max_chars: int = 4000) -> tuple[LogHandler, io.StringIO]:
    stream = io.StringIO()
    return LogHandler(stream, max_chars=max_chars), stream


def test_log_max_chars_zero_keeps_long_text_whole():
    handler, stream = log_lines(max_chars=0)
    handler.handle_text("x" * 10_000)
    assert stream.getvalue() == "[chainkit] text: " + "x" * 10_000 + "\n"


def test_log_llm_start_leaves_out_none_options():
    handler, stream = log_lines()
    handler.handle_llm_start([Message.user("hi")], {"stop": None, "temperature": 0.5})
    assert stream.getvalue() == "[chainkit] llm start: user: hi options={'temperature': 0.5}\n"


def test_log_llm_start_with_only_none_options_shows_no_options():
    handler, stream = log_lines()
    handler.handle_llm_start([Message.user("hi")], {"stop": None})
    assert stream.getvalue() == "[chainkit] llm start: user: hi\n"


def test_log_llm_start_does_not_show_callbacks_option():
    handler, stream = log_lines()
    handler.handle_llm_start([Message.user("hi")], {"callbacks": handler, "seed": 3})
    assert stream.getvalue() == "[chainkit] llm start: user: hi options={'seed': 3}\n"


def test_log_escapes_backslashes_and_newlines():
    handler, stream = log_lines()
    handler.handle_text("a\\b\nc")
    assert stream.getvalue() == "[chainkit] text: a\\\\b\\nc\n"


def test_log_tool_message_names_its_call():
    handler, stream = log_lines()
    handler.handle_llm_start([Message.tool("42", "call_7")], {})
    assert stream.getvalue() == "[chainkit] llm start: tool: (for call_7) 42\n"


def test_log_llm_end_shows_finish_reason():
    handler, stream = log_lines()
    handler.handle_llm_end(Message.assistant("done", response_meta=ResponseMeta("stop")))
    assert stream.getvalue() == "[chainkit] llm end: assistant: done (finish_reason=stop)\n"


@pytest.mark.parametrize(("wait", "shown"), [(0.25, "0.25s"), (1.5, "1.50s")])
def test_log_retry_shows_wait_with_two_decimals(wait, shown):
    handler, stream = log_lines()
    handler.handle_retry(2, RuntimeError("busy"), wait, "")
    assert stream.getvalue() == (
        f"[chainkit] retry: attempt 2 failed (RuntimeError: busy); retrying in {shown}\n"
    )


LOG_LINE = re.compile(r"\[chainkit\] ([0-9a-f]{6,}) ((?:  )*)([a-z ]+): (.*)")


class Meeting(tools.Tool):
    """Returns once both runs are inside it, after running a chain of its own."""

    name = "meet"
    description = "waits for the other run"

    def __init__(self, barrier: threading.Barrier) -> None:
        self.barrier = barrier

    def call(self, input: str) -> str:
        self.barrier.wait(30)
        return chains.run(Echo(), input)


class Echo(InputOutputChain):
    def _call(self, inputs, **options):
        return {"output": inputs["input"].upper()}


@pytest.mark.timeout(60)
def test_each_line_names_its_run_and_is_indented_by_its_depth_under_concurrent_runs():
    out = io.StringIO()
    log = LogHandler(out)
    barrier = threading.Barrier(2)

    def ask(word: str) -> None:
        fake = FakeLLM([f"Action: meet\nAction Input: {word}", f"Final Answer: {word}!"])
        executor = agents.Executor(agents.OneShotAgent(fake, [Meeting(barrier)]), callbacks=log)
        chains.run(executor, word)

    threads = [threading.Thread(target=ask, args=(word,)) for word in ("alpha", "beta")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    parsed = [LOG_LINE.fullmatch(line) for line in out.getvalue().splitlines()]
    assert all(parsed), out.getvalue()
    runs: dict[str, list[tuple[int, str, str]]] = {}
    for match in parsed:
        assert match is not None
        run_id, indent, event, detail = match.groups()
        runs.setdefault(run_id, []).append((len(indent) // 2, event, detail))
    roots = {run_id: said for run_id, said in runs.items() if said[0][:2] == (0, "chain start")}
    assert len(roots) == 2
    for said in roots.values():
        word = "alpha" if "'alpha'" in said[0][2] else "beta"
        assert [event for _, event, _ in said] == [
            *("chain start", "agent action", "agent finish", "chain end")
        ]
        assert said[-1][2] == f"Executor outputs={{'output': '{word}!'}}"
    depths = {event: depth for said in runs.values() for depth, event, _ in said}
    assert depths["llm start"] == depths["tool start"] == 1
    nested = [said for said in runs.values() if said[0][1] == "chain start" and said[0][0] == 2]
    assert sorted(said[-1][2] for said in nested) == [
        "Echo outputs={'output': 'ALPHA'}",
        "Echo outputs={'output': 'BETA'}",
    ]


def test_log_retry_says_how_much_streamed_text_was_discarded():
    handler, stream = log_lines()
    handler.handle_retry(1, RuntimeError("cut"), 0.5, "The answer is 85,")
    assert stream.getvalue() == (
        "[chainkit] retry: attempt 1 failed (RuntimeError: cut), 17 streamed characters "
        "discarded; retrying in 0.50s\n"
    )
