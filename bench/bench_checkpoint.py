"""What checkpointing adds to a step: the scripted ReAct run of bench_agent_loop.py (6 model
calls, 5 tool steps), without a checkpointer and with a `checkpoints.SQLiteStore` in a file,
alternating. Run:

    python bench/bench_checkpoint.py [--runs N] [--async] [--synchronous FULL]

It prints the median run of each, and the median difference per tool step (each step saves
its state twice: its call started, then completed; the run also saves once at its start and
once at its end, counted in the steps' share).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agent_loop import SCRIPT, TOOL_NAMES, make_tool
from chainkit import agents, chains, checkpoints
from chainkit.llms import FakeLLM

STEPS = len(SCRIPT) - 1


def build(store: checkpoints.SQLiteStore | None) -> agents.Executor:
    agent = agents.OneShotAgent(FakeLLM(SCRIPT), [make_tool(name) for name in TOOL_NAMES])
    return agents.Executor(agent, max_iterations=10, checkpointer=store)


def one_run(executor: agents.Executor, use_async: bool) -> float:
    llm = executor.agent.llm  # type: ignore[attr-defined]
    llm.calls.clear()
    start = time.perf_counter()
    if use_async:
        answer = asyncio.run(chains.arun(executor, "look up five things"))
    else:
        answer = chains.run(executor, "look up five things")
    elapsed = time.perf_counter() - start
    assert answer == "all five lookups agree"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--async", dest="use_async", action="store_true")
    parser.add_argument("--synchronous", choices=["NORMAL", "FULL"], default="NORMAL")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = checkpoints.SQLiteStore(Path(directory) / "runs.db", synchronous=args.synchronous)
        plain, saved = build(None), build(store)
        without, with_store = [], []
        for _ in range(args.runs):
            without.append(one_run(plain, args.use_async))
            with_store.append(one_run(saved, args.use_async))
        store.close()
    added = [(b - a) / STEPS for a, b in zip(without, with_store, strict=True)]
    print(
        f"{'async' if args.use_async else 'sync'}, SQLite synchronous={args.synchronous}: "
        f"{args.runs} runs; without a checkpointer median {statistics.median(without) * 1e3:.3f} "
        f"ms/run, with one {statistics.median(with_store) * 1e3:.3f} ms/run; added per step: "
        f"median {statistics.median(added) * 1e3:.3f} ms"
    )


if __name__ == "__main__":
    main()
