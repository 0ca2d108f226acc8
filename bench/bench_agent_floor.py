"""chainkit's scripted ReAct run beside the same run hand-written: the floor of the agent loop.

The hand-written loop is what any ReAct agent must do at the least: one `str.format` of the
MRKL prompt per step, one regex to read Action / Action Input / Final Answer, a dict of
functions as tools, the scratchpad grown by an f-string. Its model returns the same scripted
replies as bench_agent_loop.py's FakeLLM, so the difference is what chainkit adds: run ids,
callback events, option checks, messages, the parser's grammar. Both run in one process,
alternating, so the machine's load falls on both alike. Run:

    python bench/bench_agent_floor.py [--runs N]

It prints chainkit's median first (as "median <number>", the figure bench/compare.py reads),
then the floor's and their ratio.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agent_loop import SCRIPT, TOOL_NAMES, build, one_run
from chainkit.agents import mrkl_prompt

QUESTION = "look up five things"
PROMPT = "\n\n".join((mrkl_prompt.PREFIX, mrkl_prompt.FORMAT_INSTRUCTIONS, mrkl_prompt.SUFFIX))
STEP = re.compile(r"Action:[ \t]*(.*?)[ \t]*\nAction Input:[ \t]*(.*)|Final Answer:[ \t]*(.*)")


def floor_tool(name: str) -> Callable[[str], str]:
    def call(query: str) -> str:
        return f"{name} result for {query}"

    return call


FLOOR_TOOLS = {name: floor_tool(name) for name in TOOL_NAMES}
DESCRIPTIONS = "\n".join(
    f"{name}: looks things up with {name}; input is a short query" for name in TOOL_NAMES
)
NAMES = ", ".join(TOOL_NAMES)


def floor_run(question: str) -> str:
    """The scripted run, hand-written: prompt, model, parse, tool, until a final answer."""
    prompts: list[str] = []
    scratchpad = ""
    while True:
        prompt = PROMPT.format(
            tool_descriptions=DESCRIPTIONS,
            tool_names=NAMES,
            input=question,
            agent_scratchpad=scratchpad,
        )
        prompts.append(prompt)  # the scripted model: records the call, replies in order
        reply = SCRIPT[len(prompts) - 1]
        found = STEP.search(reply)
        if found is None:
            raise ValueError(f"unparsable reply {reply!r}")
        if found[3] is not None:
            return found[3]
        observation = FLOOR_TOOLS[found[1]](found[2])
        scratchpad += f"{reply}\nObservation: {observation}\nThought:"


def one_floor_run() -> float:
    start = time.perf_counter()
    answer = floor_run(QUESTION)
    elapsed = time.perf_counter() - start
    assert answer == "all five lookups agree"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20000)
    args = parser.parse_args()
    executor, llm = build(log=False)
    for _ in range(min(1000, args.runs)):  # warm up both
        one_run(executor, llm)
        one_floor_run()
    chainkit_times, floor_times = [], []
    for _ in range(args.runs):
        chainkit_times.append(one_run(executor, llm))
        floor_times.append(one_floor_run())
    chainkit_median = statistics.median(chainkit_times) * 1e6
    floor_median = statistics.median(floor_times) * 1e6
    print(
        f"chainkit: median {chainkit_median:.1f} µs/run; hand-written floor: median "
        f"{floor_median:.1f} µs/run; chainkit / floor = {chainkit_median / floor_median:.2f}x"
    )


if __name__ == "__main__":
    main()
