"""A dict step of model calls that each take 100 ms: the wall time of the whole pipeline, sync
(the branches in threads) and async (as tasks), beside the time the calls would take one after
another. The model sleeps (`time.sleep`, or `asyncio.sleep` when awaited) and answers. Run:

    python bench/bench_pipeline_parallel.py [--branches 3 10 ...] [--seconds S] [--runs N]

It prints, for each number of branches, the median wall time of a sync and of an async run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from chainkit import chains
from chainkit.llms import BaseModel
from chainkit.llms.model import ModelRequest
from chainkit.prompts import ChatPromptTemplate
from chainkit.schema import Message

PROMPT = ChatPromptTemplate([("user", "Tell me about {topic}.")])
INPUTS = {"topic": "owls"}


class SleepingModel(BaseModel):
    """Takes `seconds` to answer, without holding the event loop when awaited."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.reply = Message.assistant("an answer")

    def _generate(self, request: ModelRequest) -> Message:
        time.sleep(self.seconds)
        return self.reply

    async def _agenerate(self, request: ModelRequest) -> Message:
        await asyncio.sleep(self.seconds)
        return self.reply


def pipeline(branches: int, seconds: float) -> chains.Pipeline:
    """The prompt, then a dict step whose every branch is a model call of `seconds`."""
    model = SleepingModel(seconds)
    return chains.pipe(PROMPT, {f"branch_{number}": model for number in range(branches)})


def sync_times(chain: chains.Pipeline, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        outputs = chains.call(chain, INPUTS)
        times.append(time.perf_counter() - start)
        assert len(outputs) == len(chain.output_keys)
    return times


async def async_times(chain: chains.Pipeline, runs: int) -> list[float]:
    """All runs in one event loop, as a server would have it."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        outputs = await chains.acall(chain, INPUTS)
        times.append(time.perf_counter() - start)
        assert len(outputs) == len(chain.output_keys)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--branches", type=int, nargs="+", default=[3, 10, 50])
    parser.add_argument("--seconds", type=float, default=0.1, help="each model call's time")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    each = args.seconds * 1000
    print("| branches | each call | sync | async | one after another |\n|---|---|---|---|---|")
    for branches in args.branches:
        chain = pipeline(branches, args.seconds)
        sync_times(chain, 1)  # the worker threads started, once
        sync_median = statistics.median(sync_times(chain, args.runs)) * 1000
        async_median = statistics.median(asyncio.run(async_times(chain, args.runs))) * 1000
        print(
            f"| {branches} | {each:.0f} ms | {sync_median:.1f} ms | {async_median:.1f} ms "
            f"| {branches * each:.0f} ms |"
        )


if __name__ == "__main__":
    main()
