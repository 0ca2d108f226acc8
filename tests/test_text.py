"""The texts every error message and log line writes the same way (chainkit._text)."""

import ast
import io
import json
import re
from pathlib import Path

import pytest

import chainkit
from chainkit import llms, memory, prompts, tools
from chainkit._text import counted, one_line, quoted, visible, visible_json
from chainkit.callbacks import LogHandler
from chainkit.schema import Message


def test_counts_take_their_noun_in_the_singular_for_one_only():
    assert counted(1, "run") == "1 run"
    assert counted(0, "run") == "0 runs"
    assert counted(2, "reply") == "2 replies"
    assert counted(2, "day") == "2 days"
    assert counted(1234, "tool call") == "1,234 tool calls"


def test_a_quote_is_a_literal_of_the_shortened_text():
    assert quoted("it's", 10) == '"it\'s"'
    assert quoted("abcdef", 4) == "'abc…'"


def test_one_line_escapes_breaks_and_controls_and_cuts_in_the_middle():
    assert one_line("a\nb\\c\r\x1b[31m\u2028", 0) == "a\\nb\\\\c\\r\\x1b[31m\\u2028"
    assert one_line("0123456789", 4) == "01…[6 characters cut]…89"


def test_one_line_escapes_what_would_hide_or_reorder_text():
    assert one_line("a\u200bb\u200fc\ufeffd\u2066e\u061cf", 0) == (
        "a\\u200bb\\u200fc\\ufeffd\\u2066e\\u061cf"
    )
    assert one_line("\ud800 \udcff", 0) == "\\ud800 \\udcff"


def test_visible_escapes_invisible_characters_and_keeps_the_rest():
    assert visible("invoice\u202efdp.exe") == "invoice\\u202efdp.exe"
    assert visible("\x00\u200d\ud800\U000e0001\n") == "\\u0000\\u200d\\ud800\\u{e0001}\\u000a"
    assert visible("日本語 🙂 é\t") == "日本語 🙂 é\\u0009"


def test_visible_json_escapes_what_visible_does_and_reads_back_as_the_same_value():
    value = {"id": "a\x1b[2J\u202e\x9b\U000e0001\ud800", "text": "日本語\n", "n": [1, 2]}
    text = visible_json(json.dumps(value, indent=2, ensure_ascii=False))
    assert json.loads(text) == value
    assert text.isprintable() is False  # its own line breaks stay
    assert all(char.isprintable() for line in text.splitlines() for char in line)
    assert "日本語" in text and "\\u202e" in text and "\\udb40\\udc01" in text


def test_a_count_of_one_is_said_in_the_singular_wherever_chainkit_counts():
    assert one_line("0123456", 6) == "012…[1 character cut]…456"
    fake = llms.FakeLLM(["a"])
    fake.generate([Message.user("hi")])
    assert repr(fake) == "FakeLLM(1 response, 1 call)"
    with pytest.raises(
        llms.errors.FakeLLMExhaustedError, match="has 1 scripted response and was called 2"
    ):
        fake.generate([Message.user("hi")])
    with pytest.raises(
        llms.errors.FakeLLMExhaustedError, match="0 scripted responses and was called once"
    ):
        llms.FakeLLM([]).generate([Message.user("hi")])
    with pytest.raises(tools.ToolError, match="sqrt takes 1 argument, got 2"):
        tools.Calculator().call("sqrt(4, 9)")
    assert "(1 message," in repr(prompts.ChatPromptTemplate([("user", "{q}")]))
    assert repr(memory.ConversationBuffer()).endswith(", 0 messages)")
    assert repr(tools.ToolRetriever([tools.Calculator()])).startswith("ToolRetriever(1 tool,")
    log = io.StringIO()
    LogHandler(log).handle_retriever_end("q", ["one"])
    assert "'q': 1 document: " in log.getvalue()


def test_no_message_puts_a_len_before_a_plural_noun():
    # "{len(tools)} tools" reads "1 tools" for one; counted(len(tools), "tool") does not.
    wrong = []
    for path in sorted(Path(chainkit.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.JoinedStr):
                continue
            for value, after in zip(node.values, node.values[1:], strict=False):
                if (
                    isinstance(value, ast.FormattedValue)
                    and isinstance(value.value, ast.Call)
                    and isinstance(value.value.func, ast.Name)
                    and value.value.func.id == "len"
                    and isinstance(after, ast.Constant)
                    and re.match(r" [a-z]+s\b", str(after.value))
                ):
                    wrong.append(f"{path.name}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert not wrong, "\n".join(wrong)
