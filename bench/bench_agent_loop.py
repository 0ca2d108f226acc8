"""The framework's own time for a scripted ReAct run: 6 tools, 5 tool steps, a final answer.

The model answers instantly (FakeLLM) and the tools return constants, so what is measured is
chainkit: prompt formatting, the model call path, parsing, tool lookup and the loop. Run:

    python bench/bench_agent_loop.py [--runs N] [--async] [--log]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import time

from chainkit import agents, callbacks, chains, tools
from chainkit.llms import FakeLLM

TOOL_NAMES = ["search", "calculator", "weather", "stock_price", "translate", "calendar"]


def make_tool(tool_name: str) -> tools.Tool:
    class Constant(tools.Tool):
        name = tool_name
        description = f"looks things up with {tool_name}; input is a short query"

        def call(self, input: str) -> str:
            return f"{tool_name} result for {input}"

    return Constant()


SCRIPT = [
    f" I should use {name} next.\nAction: {name}\nAction Input: query number {i}"
    for i, name in enumerate(TOOL_NAMES[:5])
] + [" I now know the final answer.\nFinal Answer: all five lookups agree"]


def build(log: bool) -> tuple[agents.Executor, FakeLLM]:
    llm = FakeLLM(SCRIPT)
    agent = agents.OneShotAgent(llm, [make_tool(name) for name in TOOL_NAMES])
    handler = callbacks.LogHandler(io.StringIO()) if log else None
    return agents.Executor(agent, max_iterations=10, callbacks_handler=handler), llm


def one_run(executor: agents.Executor, llm: FakeLLM, use_async: bool) -> float:
    llm.calls.clear()
    start = time.perf_counter()
    if use_async:
        answer = asyncio.run(chains.arun(executor, "look up five things"))
    else:
        answer = chains.run(executor, "look up five things")
    elapsed = time.perf_counter() - start
    assert answer == "all five lookups agree" and len(llm.calls) == 6
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20000)
    parser.add_argument("--async", dest="use_async", action="store_true")
    parser.add_argument("--log", action="store_true", help="with a LogHandler to a buffer")
    args = parser.parse_args()
    executor, llm = build(args.log)
    for _ in range(min(1000, args.runs)):
        one_run(executor, llm, args.use_async)
    times = sorted(one_run(executor, llm, args.use_async) for _ in range(args.runs))
    median = statistics.median(times) * 1e6
    p90 = times[int(len(times) * 0.9)] * 1e6
    mode = "async" if args.use_async else "sync"
    print(
        f"{mode}{' +LogHandler' if args.log else ''}: {args.runs} runs of 6 model calls + 5 tool "
        f"calls: median {median:.1f} µs/run, p90 {p90:.1f} µs/run "
        f"({median / 6:.1f} µs per plan→act step)"
    )


if __name__ == "__main__":
    main()
