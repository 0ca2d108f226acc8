"""`chainkit run --approve`, driven through a real terminal (a pseudo-terminal the test holds):
the person types y, n with a reason, or e with new arguments at the prompt, and the run's answer
and what the tool received follow."""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chainkit import agents
from chainkit._cli.approve import ask_at_terminal

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX"),
]

ROOT = Path(__file__).resolve().parents[1]
PROMPT = b"approve? [y]es, [n]o, [e]dit the arguments: "


class Terminal:
    """`chainkit run --approve QUESTION` on a pseudo-terminal: its stdin and stderr are the
    terminal, as a person's shell gives them; stdout (the answer) is a pipe."""

    def __init__(self, question: str, trace: Path) -> None:
        self.master, slave = os.openpty()
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        env["PYTHONPATH"] = str(ROOT)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "chainkit", "run", "--approve", "--trace", str(trace), question],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=slave,
            env=env,
        )
        os.close(slave)
        self.seen = b""
        self.cursor = 0

    def wait_for(self, text: bytes, seconds: float = 30.0) -> None:
        """Reads the terminal until `text` shows after what the last wait found."""
        deadline = time.monotonic() + seconds
        while text not in self.seen[self.cursor :]:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} never showed; the terminal shows {self.seen!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.master, 4096)
                except OSError:  # the process closed the terminal
                    pytest.fail(f"{text!r} never showed; the terminal shows {self.seen!r}")
        self.cursor = self.seen.index(text, self.cursor) + len(text)

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\r")

    def answer(self) -> str:
        out, _ = self.process.communicate(timeout=30)
        os.close(self.master)
        assert self.process.returncode == 0, self.seen
        return out.decode().strip()


def tool_runs(trace: Path) -> list[tuple[str, dict[str, object]]]:
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    return [(line["kind"], line["data"]) for line in lines if line["run_kind"] == "tool"]


def test_editing_the_arguments_at_the_prompt_runs_the_tool_on_them(tmp_path):
    trace = tmp_path / "run.jsonl"
    terminal = Terminal("what is 2+3*4?", trace)
    terminal.wait_for(b'calculator wants to run with "2+3*4"')
    terminal.wait_for(PROMPT)
    terminal.type("maybe")
    terminal.wait_for(b"answer y, n or e")
    terminal.type("e")
    terminal.wait_for(b"new arguments as JSON: ")
    terminal.type("2+")
    terminal.wait_for(b"not JSON")
    terminal.wait_for(PROMPT)
    terminal.type("e")
    terminal.wait_for(b"new arguments as JSON: ")
    terminal.type('"2+2"')
    assert terminal.answer() == "4"
    kinds = [kind for kind, _ in tool_runs(trace)]
    assert kinds == ["tool_start", "approval_required", "approval_decided", "tool_end"]
    data = dict(tool_runs(trace))
    assert data["approval_decided"]["arguments"] == "2+2"
    assert data["tool_end"]["output"] == "4"  # what the calculator got: 2+2, not 2+3*4


def test_denying_at_the_prompt_shows_the_model_the_reason_and_runs_nothing(tmp_path):
    trace = tmp_path / "run.jsonl"
    terminal = Terminal("what is 2+3*4?", trace)
    terminal.wait_for(PROMPT)
    terminal.type("n")
    terminal.wait_for(b"why not? (the model reads this): ")
    terminal.type("no maths today")
    assert terminal.answer() == "Call denied by the user; calculator did not run: no maths today"
    assert dict(tool_runs(trace))["approval_decided"]["decision"] == "deny"


def test_approving_at_the_prompt_runs_the_call_as_written(tmp_path):
    terminal = Terminal("what is 2+3*4?", tmp_path / "run.jsonl")
    terminal.wait_for(PROMPT)
    terminal.type("y")
    assert terminal.answer() == "14"


def test_the_end_of_input_stops_the_run(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "chainkit", "run", "--approve", "what is 2+3*4?"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "the terminal's input ended while a tool call waited" in done.stderr


def test_a_calls_arguments_cannot_drive_the_terminal(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    request = agents.ApprovalRequest("shell", "ls\x1b[2J\u202e", "ls", None, None, 1)
    assert ask_at_terminal(request) == agents.Approve()
    shown = capsys.readouterr().err
    assert "\x1b" not in shown and "\u202e" not in shown
    assert "\\x1b[2J" in shown or "\\u001b[2J" in shown
