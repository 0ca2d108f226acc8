"""The framework's own time for a scripted ReAct run: 6 tools, 5 tool steps, a final answer.

The model answers instantly (FakeLLM) and the tools return constants, so what is measured is
chainkit: prompt formatting, the model call path, parsing, tool lookup and the loop. Run:

    python bench/bench_agent_loop.py [--runs N] [--async] [--blocking-tools]
                                     [--native-async-tools] [--log]

The tools are plain sync tools that return at once, marked `blocking = False` as the built-ins
are, so an async run calls them in its event loop's thread. With `--blocking-tools` they keep
Tool's default, `blocking = True`, and an async run pays a worker-thread hop per tool call;
`--native-async-tools` gives them an async `acall` of their own.
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


def make_tool(tool_name: str, native_async: bool = False, blocking: bool = False) -> tools.Tool:
    class Constant(tools.Tool):
        name = tool_name
        description = f"looks things up with {tool_name}; input is a short query"

        def call(self, input: str) -> str:
            return f"{tool_name} result for {input}"

    class AsyncConstant(Constant):
        async def acall(self, input: str) -> str:
            return self.call(input)

    Constant.blocking = blocking
    return AsyncConstant() if native_async else Constant()


SCRIPT = [
    f" I should use {name} next.\nAction: {name}\nAction Input: query number {i}"
    for i, name in enumerate(TOOL_NAMES[:5])
] + [" I now know the final answer.\nFinal Answer: all five lookups agree"]


def build(
    log: bool, native_async: bool = False, blocking: bool = False
) -> tuple[agents.Executor, FakeLLM]:
    llm = FakeLLM(SCRIPT)
    made = [make_tool(name, native_async, blocking) for name in TOOL_NAMES]
    agent = agents.OneShotAgent(llm, made)
    handler = callbacks.LogHandler(io.StringIO()) if log else None
    return agents.Executor(agent, max_iterations=10, callbacks=handler), llm


def one_run(executor: agents.Executor, llm: FakeLLM) -> float:
    llm.calls.clear()
    start = time.perf_counter()
    answer = chains.run(executor, "look up five things")
    elapsed = time.perf_counter() - start
    assert answer == "all five lookups agree" and len(llm.calls) == 6
    return elapsed


async def one_async_run(executor: agents.Executor, llm: FakeLLM) -> float:
    llm.calls.clear()
    start = time.perf_counter()
    answer = await chains.arun(executor, "look up five things")
    elapsed = time.perf_counter() - start
    assert answer == "all five lookups agree" and len(llm.calls) == 6
    return elapsed


async def async_runs(executor: agents.Executor, llm: FakeLLM, runs: int) -> list[float]:
    """All runs in one event loop, as a server would have it."""
    return [await one_async_run(executor, llm) for _ in range(runs)]


def measure(executor: agents.Executor, llm: FakeLLM, runs: int, use_async: bool) -> list[float]:
    if use_async:
        return asyncio.run(async_runs(executor, llm, runs))
    return [one_run(executor, llm) for _ in range(runs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20000)
    parser.add_argument("--async", dest="use_async", action="store_true")
    parser.add_argument("--log", action="store_true", help="with a LogHandler to a buffer")
    parser.add_argument(
        "--native-async-tools", action="store_true", help="tools with their own async acall"
    )
    parser.add_argument(
        "--blocking-tools", action="store_true", help="tools left blocking (a thread per call)"
    )
    args = parser.parse_args()
    executor, llm = build(args.log, args.native_async_tools, args.blocking_tools)
    measure(executor, llm, min(1000, args.runs), args.use_async)
    times = sorted(measure(executor, llm, args.runs, args.use_async))
    median = statistics.median(times) * 1e6
    p90 = times[int(len(times) * 0.9)] * 1e6
    mode = "async" if args.use_async else "sync"
    mode += " +native async tools" if args.native_async_tools else ""
    mode += " +blocking tools" if args.blocking_tools else ""
    print(
        f"{mode}{' +LogHandler' if args.log else ''}: {args.runs} runs of 6 model calls + 5 tool "
        f"calls: median {median:.1f} µs/run, p90 {p90:.1f} µs/run "
        f"({median / 6:.1f} µs per plan→act step)"
    )


if __name__ == "__main__":
    main()
