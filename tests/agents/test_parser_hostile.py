"""parse_mrkl_output under hostile replies: wrong types, empty, control characters, lone
surrogates, characters that change length when lower-cased, 1 MB replies of every awkward
shape, replies cut off anywhere, and many threads at once. Each case runs under a hard timeout.
"""

from __future__ import annotations

import threading

import pytest

from chainkit.agents.errors import OutputParserError
from chainkit.agents.mrkl_parser import (
    MAX_FENCE_LINES,
    MISSING_ACTION,
    MISSING_ACTION_INPUT,
    parse_mrkl_output,
)
from chainkit.schema import AgentAction, AgentFinish

MB = 1_000_000


def action(text: str) -> tuple[str, str]:
    step = parse_mrkl_output(text)
    assert isinstance(step, AgentAction), step
    assert text.startswith(step.log)
    return step.tool, step.tool_input


def answer(text: str) -> str:
    step = parse_mrkl_output(text)
    assert isinstance(step, AgentFinish), step
    return str(step.return_values["output"])


def observation(text: str) -> str:
    with pytest.raises(OutputParserError) as info:
        parse_mrkl_output(text)
    return info.value.observation


@pytest.mark.timeout(60)
@pytest.mark.parametrize("reply", [None, b"Action: a\nAction Input: b", 42, ["Action: a"]])
def test_a_reply_that_is_not_text_is_a_type_error_naming_str(reply):
    with pytest.raises(TypeError, match=f"expects the reply as str, got {type(reply).__name__}"):
        parse_mrkl_output(reply)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "reply", ["", " ", "\n\n\n", "\t\r\n", "\x00", "\u3000", "```", "~~~\n~~~"]
)
def test_empty_or_blank_replies_ask_for_an_action(reply):
    assert observation(reply) == MISSING_ACTION


@pytest.mark.timeout(60)
def test_nul_bytes_and_control_characters_pass_through():
    assert action("Action: a\x00b\nAction Input: x\x00y\x07") == ("a\x00b", "x\x00y\x07")
    assert answer("Final Answer: \x00\x1b[31mred\x1b[0m") == "\x00\x1b[31mred\x1b[0m"


@pytest.mark.timeout(60)
def test_lone_surrogates_pass_through():
    assert action("Action: \ud800\nAction Input: \udfff") == ("\ud800", "\udfff")
    assert answer("\udc80Final Answer: \ud83d") == "\ud83d"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("count", [1, 2, 1000])
def test_characters_that_grow_when_lower_cased_do_not_shift_positions(count):
    # "İ".lower() is two characters: positions found on the lower-cased copy must still fit.
    prefix = "İ" * count
    assert action(f"{prefix}\naction: search\naction input: İzmir") == ("search", "İzmir")
    assert answer(f"{prefix} final answer: no\nfinal answer: İ{prefix}") == f"İ{prefix}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\r"], ids=repr)
def test_unicode_line_separators_are_not_line_breaks(separator):
    # Only "\n" ends a line, as a model's tokenizer writes it; other breaks stay in the text.
    text = f"Action: search{separator}Action Input: x{separator}Observation: y"
    assert action(text) == ("search", f"x{separator}Observation: y")


_REPLY = (
    "Thought: I need the weather.\n```\nAction: search\nAction Input: 「weather in 北京」\n```\n"
    "Observation: sunny\nThought: done\nFinal Answer: sunny"
)


@pytest.mark.timeout(20)
def test_a_reply_cut_off_anywhere_parses_or_asks_for_a_fix():
    for end in range(len(_REPLY) + 1):
        try:
            step = parse_mrkl_output(_REPLY[:end])
        except OutputParserError as error:
            assert error.observation in (MISSING_ACTION, MISSING_ACTION_INPUT)
            continue
        assert isinstance(step, AgentAction)  # the action comes first in every prefix
        assert step.tool == "search"
        assert "```" not in step.tool_input and "Observation" not in step.tool_input


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\x00" * MB, MISSING_ACTION),
        ("\ud800" * MB, MISSING_ACTION),
        ("İ" * MB, MISSING_ACTION),
        ("：" * MB, MISSING_ACTION),
        ("随机数" * (MB // 3), MISSING_ACTION),
        ("Action：" * (MB // 7), MISSING_ACTION_INPUT),
        ("Action Input:" * (MB // 13), MISSING_ACTION),
        ("**Action**" * (MB // 10), MISSING_ACTION),
        ("\n> # - * _ " * (MB // 11), MISSING_ACTION),
        ("~~~\n" * (MB // 4), MISSING_ACTION),
        ("```json\n" * (MB // 8), MISSING_ACTION),
        ("`" * MB, MISSING_ACTION),
        ("\r\n" * (MB // 2), MISSING_ACTION),
    ],
    ids=lambda value: repr(value[:12]) if isinstance(value, str) else value,
)
def test_megabyte_replies_without_a_step(text, expected):
    assert observation(text) == expected


@pytest.mark.timeout(20)
def test_megabyte_final_answer_of_keyword_lookalikes():
    body = "final answer is not: a keyword mid-line. " * (MB // 41)
    assert answer(f"Final Answer: {body}") == body.strip()


@pytest.mark.timeout(20)
def test_megabyte_input_inside_a_wrapping_fence():
    body = "line with `ticks` and ~tildes~\n" * (MB // 31)
    text = f"```\nAction: write\nAction Input: {body}```\nObservation: made up"
    assert action(text) == ("write", body.strip())


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("blocks", "expected"), [(MAX_FENCE_LINES // 2 - 1, "b"), (MAX_FENCE_LINES // 2, "b\n```")]
)
def test_fences_past_the_limit_are_plain_text(blocks, expected):
    # Pairing fences is bounded work: past MAX_FENCE_LINES the reply's fences are plain text,
    # so the fence wrapping this action is no longer seen and its closing line stays.
    code_blocks = "```python\nx = 1\n```\n" * blocks
    assert action(f"{code_blocks}```\nAction: a\nAction Input: b\n```") == ("a", expected)


@pytest.mark.timeout(20)
def test_the_limit_counts_only_the_fences_of_the_section_read():
    # Exactly MAX_FENCE_LINES in the answer (a block whose ~~~ line closes nothing, whole
    # blocks, a bare fence at the end that closes one opened out of sight), more after it:
    # the answer's fences are still paired, so the stray one is dropped.
    blocks = "```\nc\n```\n" * ((MAX_FENCE_LINES - 4) // 2)
    answer_text = f"x\n```python\n~~~\n```\n{blocks}"
    assert answer_text.count("\n```") + answer_text.count("\n~~~") == MAX_FENCE_LINES - 1
    text = f"Final Answer: {answer_text}```\nObservation: made up\n```\n```"
    step = parse_mrkl_output(text)
    assert isinstance(step, AgentFinish)
    assert step.return_values["output"] == answer_text.strip()


@pytest.mark.timeout(30)
def test_many_threads_parse_at_once_without_mixing_results():
    replies = [
        (f"```\nThought: {i}\nAction: tool{i}\nAction Input: 「{i}」\n```", (f"tool{i}", str(i)))
        for i in range(16)
    ]
    failures: list[str] = []
    barrier = threading.Barrier(len(replies))

    def work(text: str, expected: tuple[str, str]) -> None:
        barrier.wait()
        for _ in range(300):
            got = action(text)
            if got != expected:
                failures.append(f"{text!r} gave {got!r}")

    threads = [threading.Thread(target=work, args=reply) for reply in replies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
