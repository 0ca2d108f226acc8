"""Time `parse_mrkl_output` on typical replies and on 1 MB adversarial ones.

Run from the repository root: `python bench/bench_parser.py`. Prints microseconds per parse for
typical replies, then milliseconds per parse for each adversarial shape at 1 MB (the target is a
few ms), at 0.25, 0.5 and 2 MB to show the cost grows linearly, and what the 1 MB parse returned.
Times are the best of several runs; above ~1 MB they also carry cache and allocation effects.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit.agents.errors import OutputParserError
from chainkit.agents.mrkl_parser import parse_mrkl_output
from chainkit.schema import AgentAction
from tests.agents.test_mrkl_parser import cve_2024_58340

MB = 1_000_000

TYPICAL_ACTION = (
    "Thought: The user wants the population of the largest city in Canada. I should first "
    "look up which city is the largest, then find its latest census population and compare "
    "it with the metropolitan area figure.\n"
    "Action: search\n"
    'Action Input: "largest city in Canada by population 2021 census"'
)
TYPICAL_ANSWER = (
    "Thought: I now know the final answer. Toronto is the largest city in Canada; the 2021 "
    "census counted 2,794,356 people in the city proper and about 6.2 million in the "
    "census metropolitan area.\n"
    "Final Answer: Toronto, with 2,794,356 people at the 2021 census (city proper)."
)


def repeat(unit: str, size: int) -> str:
    return unit * (size // len(unit))


def fenced(size: int) -> str:
    code = repeat("print('x')  # Observation: not a keyword inside code\n", size)
    return f"Action: python\nAction Input:\n```python\n{code}```\nObservation: made up"


SHAPES: dict[str, Callable[[int], str]] = {
    "CVE-2024-58340 input, n scaled to size": lambda size: cve_2024_58340(size // 5),
    "CVE-2024-58340 input (n=400) repeated": lambda size: repeat(cve_2024_58340(400), size),
    "'Action:' repeated, one line": lambda size: repeat("Action:", size),
    "'Action Input:\\n' repeated": lambda size: repeat("Action Input:\n", size),
    "action with a 1-line input, no newline": lambda size: (
        "Action: echo Action Input: " + repeat("lorem ipsum ", size)
    ),
    "prose, no keyword, no newline": lambda size: repeat("lorem ipsum dolor sit amet ", size),
    "huge fenced block as input": fenced,
    "reply wrapped in a fence, huge input": lambda size: (
        "```\nAction: echo\nAction Input: " + repeat("lorem ipsum\n", size) + "```"
    ),
    "'```\\n' repeated, then an action": lambda size: (
        repeat("```\n", size) + "Action: a\nAction Input: b\n" + repeat("```\n", size)
    ),
    "lines of whitespace (' \\t \\n')": lambda size: repeat(" \t \n", size),
    "newlines only": lambda size: "\n" * size,
    "lower-case keywords mid-line": lambda size: repeat("x action: y final answer: ", size),
    "'xAction:' repeated (exact case, no boundary)": lambda size: repeat("xAction:", size),
    "'Observation:\\n' repeated, then an action": lambda size: (
        repeat("Observation:\n", size) + "Action: a\nAction Input: b"
    ),
    "spaces between keyword and colon": lambda size: "Action" + " " * size + "x",
    "'**' markdown at line starts": lambda size: repeat("\n**", size),
    "'Action: a\\nThought: b\\n' repeated": lambda size: repeat("Action: a\nThought: b\n", size),
    "Chinese prose, then an action": lambda size: (
        repeat("随机数计算工具告诉我一个随机数。", size)
        + "\nAction：随机数计算工具\nAction Input：1"
    ),
}


def per_parse(text: str, rounds: int) -> float:
    """Best seconds per parse over `rounds` runs (the minimum is the least noisy estimate)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        with contextlib.suppress(OutputParserError):
            parse_mrkl_output(text)
        best = min(best, time.perf_counter() - start)
    return best


def outcome(text: str) -> str:
    try:
        step = parse_mrkl_output(text)
    except OutputParserError as error:
        return f"error: {error.observation}"
    if isinstance(step, AgentAction):
        return f"action {step.tool[:20]!r}, input of {len(step.tool_input)} chars"
    return f"final answer of {len(step.return_values['output'])} chars"


def typical(text: str) -> float:
    loops = 20_000
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(loops):
            parse_mrkl_output(text)
        best = min(best, (time.perf_counter() - start) / loops)
    return best


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    for label, text in (("action", TYPICAL_ACTION), ("final answer", TYPICAL_ANSWER)):
        print(f"typical {label} reply, {len(text)} chars: {typical(text) * 1e6:.2f} µs/parse")
    print()
    sizes = (MB, MB // 4, MB // 2, 2 * MB)
    print(f"{'shape':46} {'1 MB':>6} | {'0.25':>6} {'0.5':>6} {'2 MB':>6}  result at 1 MB")
    for name, build in SHAPES.items():
        times = []
        for size in sizes:
            text = build(size)
            per_parse(text, rounds=1)  # warm up the allocator and caches
            times.append(per_parse(text, rounds=7) * 1e3)
        one, *others = times
        scaling = " ".join(f"{ms:6.2f}" for ms in others)
        print(f"{name:46} {one:6.2f} | {scaling}  {outcome(build(MB))}")


if __name__ == "__main__":
    main()
