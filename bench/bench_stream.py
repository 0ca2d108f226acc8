"""What `chains.stream` (or `chains.astream`) adds per event to bench_agent_loop's run, over
the same run with `chains.run` (`chains.arun`). Run:

    python bench/bench_stream.py [--runs N] [--rounds R] [--async]

The streamed run is read whole, as a reader that keeps up would: its model streams its tokens
(that is what a stream is for), and each token is an event. Rounds of plain and streamed runs
alternate, so a slower stretch of a shared machine hits both alike. It prints the added
microseconds per event as "median <number>" (what bench/compare.py reads).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agent_loop import build
from chainkit import agents, chains
from chainkit.llms import FakeLLM

QUESTION = "look up five things"
ANSWER = "all five lookups agree"


def plain_runs(executor: agents.Executor, llm: FakeLLM, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        llm.calls.clear()
        start = time.perf_counter()
        answer = chains.run(executor, QUESTION)
        times.append(time.perf_counter() - start)
        assert answer == ANSWER
    return times


def streamed_runs(executor: agents.Executor, llm: FakeLLM, runs: int) -> tuple[list[float], int]:
    """The times of `runs` streamed runs, and the events of one."""
    times, events = [], 0
    for _ in range(runs):
        llm.calls.clear()
        start = time.perf_counter()
        events = sum(1 for _ in chains.stream(executor, QUESTION))
        times.append(time.perf_counter() - start)
        assert len(llm.calls) == 6
    return times, events


async def async_plain_runs(executor: agents.Executor, llm: FakeLLM, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        llm.calls.clear()
        start = time.perf_counter()
        answer = await chains.arun(executor, QUESTION)
        times.append(time.perf_counter() - start)
        assert answer == ANSWER
    return times


async def async_streamed_runs(
    executor: agents.Executor, llm: FakeLLM, runs: int
) -> tuple[list[float], int]:
    times, events = [], 0
    for _ in range(runs):
        llm.calls.clear()
        start = time.perf_counter()
        events = 0
        async for _ in chains.astream(executor, QUESTION):
            events += 1
        times.append(time.perf_counter() - start)
        assert len(llm.calls) == 6
    return times, events


def one_round(use_async: bool, runs: int) -> tuple[list[float], list[float], int]:
    executor, llm = build(log=False)
    if use_async:

        async def both() -> tuple[list[float], tuple[list[float], int]]:
            plain = await async_plain_runs(executor, llm, runs)
            return plain, await async_streamed_runs(executor, llm, runs)

        plain, (streamed, events) = asyncio.run(both())
    else:
        plain = plain_runs(executor, llm, runs)
        streamed, events = streamed_runs(executor, llm, runs)
    return plain, streamed, events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--async", dest="use_async", action="store_true")
    args = parser.parse_args()
    one_round(args.use_async, min(200, args.runs))  # warm up
    plain: list[float] = []
    streamed: list[float] = []
    events = 0
    for _ in range(args.rounds):
        round_plain, round_streamed, events = one_round(args.use_async, args.runs // args.rounds)
        plain += round_plain
        streamed += round_streamed
    base = statistics.median(plain) * 1e6
    with_stream = statistics.median(streamed) * 1e6
    added = (with_stream - base) / events
    mode = "async" if args.use_async else "sync"
    print(
        f"{mode}: plain run {base:.1f} µs, streamed {with_stream:.1f} µs for {events} events: "
        f"median {added:.2f} µs added per event"
    )


if __name__ == "__main__":
    main()
