"""Tests that pin behaviour of the log handler, the CLI and Message which a mutation run showed
to be unchecked."""

from __future__ import annotations

import argparse
import io

import pytest

import chainkit.cli
from chainkit.callbacks import LogHandler
from chainkit.llms import FakeLLM, Model
from chainkit.schema import ContentPart, ImagePart, Message, ResponseMeta, TextPart

# --- callbacks/log.py ----------------------------------------------------------------------


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
    handler.handle_retry(2, RuntimeError("busy"), wait)
    assert stream.getvalue() == (
        f"[chainkit] retry: attempt 2 failed (RuntimeError: busy); retrying in {shown}\n"
    )


# --- cli.py --------------------------------------------------------------------------------


@pytest.fixture
def no_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.mark.usefixtures("no_endpoint")
def test_cli_returns_130_on_keyboard_interrupt(monkeypatch: pytest.MonkeyPatch):
    def interrupted(args: argparse.Namespace, model: Model) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(chainkit.cli, "_run", interrupted)
    assert chainkit.cli.main(["run", "q"]) == 130


@pytest.mark.usefixtures("no_endpoint")
def test_cli_masks_keys_in_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    key = "sk-abcdefghijklmnopqrstuvwxyz1234"

    def failing(args: argparse.Namespace, model: Model) -> str:
        raise RuntimeError(f"rejected key {key}")

    monkeypatch.setattr(chainkit.cli, "_run", failing)
    assert chainkit.cli.main(["run", "q"]) == 1
    captured = capsys.readouterr()
    assert key not in captured.err
    assert "chainkit: error: RuntimeError: rejected key sk-abcd***" in captured.err
    assert captured.out == ""


@pytest.mark.usefixtures("no_endpoint")
def test_cli_sends_parse_errors_back_to_the_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    fake = FakeLLM(["no format at all", " Final Answer: done"])

    def scripted(args: argparse.Namespace) -> Model:
        return fake

    monkeypatch.setattr(chainkit.cli, "_model", scripted)
    assert chainkit.cli.main(["run", "q"]) == 0
    assert capsys.readouterr().out == "done\n"
    assert len(fake.calls) == 2


# --- schema/message.py ---------------------------------------------------------------------


def test_from_dict_keeps_data_url_without_base64_as_url():
    message = Message.from_dict(
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "data:text/plain,hi"}}],
        }
    )
    assert message.parts == [ImagePart(url="data:text/plain,hi")]


def test_user_copies_the_parts_list():
    parts: list[ContentPart] = [TextPart("hello")]
    message = Message.user(parts)
    parts.append(TextPart("later"))
    parts[0] = TextPart("replaced")
    assert message.parts == [TextPart("hello")]
