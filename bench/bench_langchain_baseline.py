"""The same scripted ReAct run as bench_agent_loop.py, through LangChain's classic
AgentExecutor, to compare framework time on one machine. Not a dependency of chainkit:

    pip install langchain langchain-classic && python bench/bench_langchain_baseline.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_classic.agents import AgentExecutor, ZeroShotAgent
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.tools import BaseTool

from bench.bench_agent_loop import SCRIPT, TOOL_NAMES


def make_tool(tool_name: str) -> BaseTool:
    class Constant(BaseTool):
        name: str = tool_name
        description: str = f"looks things up with {tool_name}; input is a short query"

        def _run(self, input: str) -> str:
            return f"{tool_name} result for {input}"

    return Constant()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    tools = [make_tool(name) for name in TOOL_NAMES]
    llm = FakeListLLM(responses=SCRIPT)
    agent = ZeroShotAgent.from_llm_and_tools(llm, tools)
    executor = AgentExecutor(agent=agent, tools=tools, max_iterations=10)

    def one_run() -> float:
        llm.i = 0
        start = time.perf_counter()
        outputs = executor.invoke({"input": "look up five things"})
        elapsed = time.perf_counter() - start
        assert outputs["output"] == "all five lookups agree" and llm.i == 0
        return elapsed

    for _ in range(min(200, args.runs)):
        one_run()
    times = sorted(one_run() for _ in range(args.runs))
    median = statistics.median(times) * 1e6
    p90 = times[int(len(times) * 0.9)] * 1e6
    print(
        f"langchain classic AgentExecutor: {args.runs} runs: median {median:.1f} µs/run, "
        f"p90 {p90:.1f} µs/run"
    )


if __name__ == "__main__":
    main()
