"""Times render_chat on a 4-message tool-calling conversation: the built-in chatml and a
user-supplied jinja2 template, plus the cost of the first call in a fresh interpreter.

Run from the repo root: `PYTHONPATH=. python bench/bench_render_chat.py`. Prints µs per render.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

from chainkit.prompts import render_chat
from chainkit.schema import FunctionCall, Message, ToolCall, ToolInfo

MESSAGES = [
    Message.system("You are a finance assistant. Call a tool when you need data."),
    Message.user("What was Kweichow Moutai's 2025 net profit?"),
    Message.assistant(
        tool_calls=[
            ToolCall("call_001", FunctionCall("get_report", '{"stock":"600519","year":"2025"}'))
        ]
    ),
    Message.tool("Net profit 2025: 68.5 billion CNY", "call_001", "get_report"),
]
TOOLS = [ToolInfo("get_report", "Fetch a listed company's annual report")]

# The same shape a model's own template has: block tags, tojson, string concatenation.
USER_TEMPLATE = """\
{% for message in messages %}
<|im_start|>{{ message.role }}
{% if message.tool_calls %}
{% for call in message.tool_calls %}
<tool_call>{{ call.function | tojson }}</tool_call>
{% endfor %}
{% else %}
{{ message.content }}
{% endif %}
<|im_end|>
{% endfor %}
{% if add_generation_prompt %}{{ '<|im_start|>' + 'assistant' }}
{% endif %}"""

CHECKOUT = Path(__file__).resolve().parent.parent

FIRST_CALL = (
    "import time\n"
    "from bench.bench_render_chat import MESSAGES, render_chat\n"
    "t = time.perf_counter()\n"
    "render_chat(MESSAGES)\n"
    "print((time.perf_counter() - t) * 1e6)\n"
)


def best_us(call: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    cases = {
        "chatml, no tools": lambda: render_chat(MESSAGES),
        "chatml, 1 tool": lambda: render_chat(MESSAGES, TOOLS),
        "user jinja2 template": lambda: render_chat(MESSAGES, TOOLS, USER_TEMPLATE),
    }
    for name, call in cases.items():
        print(f"{name:22} {best_us(call, 20_000):7.2f} µs per render")
    first = min(
        float(
            subprocess.run(
                [sys.executable, "-c", FIRST_CALL],
                cwd=CHECKOUT,  # where `bench` is a package, wherever this was run from
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for _ in range(5)
    )
    print(f"first chatml render in a fresh interpreter: {first:.0f} µs")


if __name__ == "__main__":
    main()
