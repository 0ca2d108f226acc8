"""A 3-step pipeline (prompt | scripted model | JSON parser) through `chains.call`, beside the
same work hand-written as plain function calls: what composing the steps costs.

The floor formats the same chat prompt, calls the same model's `generate` and reads the reply
with the same parser's `parse`, so the difference is what the pipeline adds: `chains.call`'s
checks and run, the hand-over of each step's value to the next. The model answers at once
with a fixed JSON reply. The parser is `parsers.JSONParser` (tolerant: prose and fences around
the object, trailing commas), or with `--parser json.loads` the strict `json.loads` itself,
the least any JSON reading costs. Both sides run in one process, in alternating rounds of 100
calls, so the machine's load falls on both alike. Run:

    python bench/bench_pipeline.py [--runs N] [--async] [--parser {JSONParser,json.loads}]

It prints the pipeline's median first (as "median <number>", the figure bench/compare.py
reads), then the floor's, their difference and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from chainkit import chains, parsers
from chainkit.llms import BaseModel
from chainkit.llms.model import ModelRequest
from chainkit.prompts import ChatPromptTemplate
from chainkit.schema import Message

REPLY = '{"city": "Paris", "country": "France", "population": 2102650, "rivers": ["Seine"]}'
INPUTS = {"city": "Paris"}
EXPECTED = json.loads(REPLY)
BLOCK = 100
"""Calls of one side in a row, before the other's: a call of ~10 µs timed right after a
different one pays for the caches that one left cold, which no steady stream of calls does."""


class ScriptedModel(BaseModel):
    """Answers every call at once with the same reply."""

    def __init__(self, reply: str) -> None:
        self.reply = Message.assistant(reply)

    def _generate(self, request: ModelRequest) -> Message:
        return self.reply


class JSONLoads:
    """`json.loads` as a parser step: its `parse` is json.loads itself."""

    output_type = dict
    parse = staticmethod(json.loads)


PARSERS: dict[str, Callable[[], Any]] = {"JSONParser": parsers.JSONParser, "json.loads": JSONLoads}
PROMPT = ChatPromptTemplate(
    [("system", "You answer with one JSON object."), ("user", "Tell me about {city}.")]
)
MODEL = ScriptedModel(REPLY)


@dataclass(frozen=True)
class Case:
    """The pipeline of one parser, and the same work as plain calls."""

    pipeline: chains.Pipeline
    parse: Callable[[str], Any]

    @classmethod
    def of(cls, parser: str) -> Case:
        made = PARSERS[parser]()
        return cls(chains.pipe(PROMPT, MODEL, made), made.parse)

    def floor(self) -> Any:
        return self.parse(MODEL.generate(PROMPT.format_messages(**INPUTS)).content)

    async def afloor(self) -> Any:
        return self.parse((await MODEL.agenerate(PROMPT.format_messages(**INPUTS))).content)

    def one_call(self) -> float:
        start = time.perf_counter()
        outputs = chains.call(self.pipeline, INPUTS)
        elapsed = time.perf_counter() - start
        assert outputs == {"output": EXPECTED}, outputs
        return elapsed

    def one_floor_call(self) -> float:
        start = time.perf_counter()
        value = self.floor()
        elapsed = time.perf_counter() - start
        assert value == EXPECTED, value
        return elapsed

    async def one_acall(self) -> float:
        start = time.perf_counter()
        outputs = await chains.acall(self.pipeline, INPUTS)
        elapsed = time.perf_counter() - start
        assert outputs == {"output": EXPECTED}, outputs
        return elapsed

    async def one_afloor_call(self) -> float:
        start = time.perf_counter()
        value = await self.afloor()
        elapsed = time.perf_counter() - start
        assert value == EXPECTED, value
        return elapsed


def in_rounds(
    runs: int, first: Callable[[], float], second: Callable[[], float]
) -> tuple[list[float], list[float]]:
    """`runs` timings of each, taken in rounds of BLOCK calls of one then BLOCK of the other."""
    firsts: list[float] = []
    seconds: list[float] = []
    for _ in range(-(-runs // BLOCK)):
        firsts.extend(first() for _ in range(BLOCK))
        seconds.extend(second() for _ in range(BLOCK))
    return firsts, seconds


async def ain_rounds(
    runs: int, first: Callable[[], Awaitable[float]], second: Callable[[], Awaitable[float]]
) -> tuple[list[float], list[float]]:
    """`in_rounds` for async calls, all in one event loop, as a server would have it."""
    firsts: list[float] = []
    seconds: list[float] = []
    for _ in range(-(-runs // BLOCK)):
        firsts.extend([await first() for _ in range(BLOCK)])
        seconds.extend([await second() for _ in range(BLOCK)])
    return firsts, seconds


def medians(
    sides: tuple[Callable[[], float], Callable[[], float]],
    async_sides: tuple[Callable[[], Awaitable[float]], Callable[[], Awaitable[float]]],
    runs: int,
    use_async: bool,
) -> tuple[float, float]:
    """Each side's median in µs per call, sync or async, after a warm-up of both."""
    for count in (min(1000, runs), runs):
        if use_async:
            firsts, seconds = asyncio.run(ain_rounds(count, *async_sides))
        else:
            firsts, seconds = in_rounds(count, *sides)
    return statistics.median(firsts) * 1e6, statistics.median(seconds) * 1e6


def arguments(doc: str, runs: int) -> tuple[argparse.Namespace, Case]:
    """The arguments every pipeline benchmark here takes, and the case they ask for."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--async", dest="use_async", action="store_true")
    parser.add_argument("--parser", choices=sorted(PARSERS), default="JSONParser")
    args = parser.parse_args()
    return args, Case.of(args.parser)


def main() -> None:
    args, case = arguments(__doc__, runs=20000)
    pipeline_median, floor_median = medians(
        (case.one_call, case.one_floor_call),
        (case.one_acall, case.one_afloor_call),
        args.runs,
        args.use_async,
    )
    mode = "async" if args.use_async else "sync"
    print(
        f"{mode} {case.pipeline!r}: median {pipeline_median:.1f} µs/call; hand-written floor: "
        f"median {floor_median:.1f} µs/call; the pipeline adds "
        f"{pipeline_median - floor_median:.1f} µs/call; pipeline / floor = "
        f"{pipeline_median / floor_median:.2f}x"
    )


if __name__ == "__main__":
    main()
