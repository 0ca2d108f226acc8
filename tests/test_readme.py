"""Every Python example in the README runs as written (the OpenAI one against the loopback
server, the MCP HTTP one against `chainkit mcp-serve --http`, whose addresses replace the
examples')."""

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.mcp_server_process import http_server
from tests.support.openai_server import OpenAIServer

README = Path(__file__).resolve().parent.parent / "README.md"
EXAMPLE_URL = "http://127.0.0.1:8000/v1"
MCP_EXAMPLE_URL = "http://127.0.0.1:8765/mcp"
MCP_SERVE = [sys.executable, "-m", "chainkit", "mcp-serve", "chainkit.tools:builtin_tools"]


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_the_two_setup_commands():
    text = README.read_text(encoding="utf-8")
    assert '<!-- setup:run -->\n```sh\npip install -e . && chainkit run "' in text
    assert '<!-- setup:test -->\n```sh\npip install -e ".[dev]" && pytest\n```' in text


# What each example must print, in README order: running is not enough, it must work.
EXPECTED = [
    "1024",
    "Cats sleep 16 hours a day.",
    "You said hi.",
    "北京: 21 celsius, sunny",
    "Order(items=[Item(name='tea', price=2.5)], status='open')\n"
    "('items[0].price: expected number, got \"cheap\"',)",
    "hello from the loopback server",
    "42",
    'root ::= thought "\\n" ( action | "Final Answer: " answer "\\n" )',
    "<|im_start|>system\n你是金融助手<|im_end|>\n"
    "<|im_start|>user\n帮我查 2025 年贵州茅台的净利润<|im_end|>\n<|im_start|>assistant\n",
    "42",
    "42",
    "['get_weather']\n北京: sunny, 21 °C",
    "calculator returned 84\n84",
    "qwen2.5: 1 call, 11 tokens in, 7 out, cost 0.0000039",
    "ada is charged and has her receipt ['ada']",
    "moved 50 to savings\nasked: transfer {'amount': 500}\nmoved 500 to checking\n"
    "asked: transfer {'amount': 5000}\n"
    "Call denied by the user; transfer did not run: over the daily limit",
    "waiting: transfer {'amount': 500}\nmoved 50 to checking",
]


def test_every_example_has_an_expectation():
    assert len(python_blocks()) == len(EXPECTED)


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_example_runs(index, openai_server: OpenAIServer, tmp_path):
    code = python_blocks()[index]
    if EXAMPLE_URL in code:
        openai_server.push("hello from the loopback server")
        code = code.replace(EXAMPLE_URL, openai_server.base_url)
    script = tmp_path / "example.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    with contextlib.ExitStack() as stack:
        if "MCPTools" in code:
            pytest.importorskip("mcp")
        if MCP_EXAMPLE_URL in code:
            server_url = stack.enter_context(http_server([*MCP_SERVE, "--http", "0"], env=env))
            code = code.replace(MCP_EXAMPLE_URL, server_url)
        script.write_text(code, encoding="utf-8")
        result = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            cwd=tmp_path,  # where an example's files (runs.db) go
        )
    assert result.returncode == 0, result.stderr
    assert EXPECTED[index] in result.stdout
