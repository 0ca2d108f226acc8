"""bench_pipeline.py's pipeline beside LangChain LCEL's equivalent (ChatPromptTemplate |
FakeListChatModel | JsonOutputParser), measured in one run, in alternating rounds of 100
calls, so the machine's load falls on both alike. LangChain is not a dependency of chainkit:
install it first (in a virtualenv of its own, beside chainkit), then run

    pip install langchain-core && python bench/bench_pipeline_langchain.py [--runs N] [--async]
        [--parser {JSONParser,json.loads}]

Both prompts say the same, both models answer at once with the same JSON reply, both parsers
read it into the same dict; chainkit's is parsers.JSONParser, tolerant as JsonOutputParser is,
unless `--parser json.loads` says otherwise. It prints chainkit's median first (as "median
<number>"), then LCEL's and how many times faster chainkit is.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate

from bench.bench_pipeline import EXPECTED, INPUTS, REPLY, Case, add_arguments, ain_rounds, in_rounds

LCEL: Any = (
    ChatPromptTemplate.from_messages(
        [("system", "You answer with one JSON object."), ("human", "Tell me about {city}.")]
    )
    | FakeListChatModel(responses=[REPLY])
    | JsonOutputParser()
)


def one_lcel_call() -> float:
    start = time.perf_counter()
    value = LCEL.invoke(INPUTS)
    elapsed = time.perf_counter() - start
    assert value == EXPECTED, value
    return elapsed


async def one_lcel_acall() -> float:
    start = time.perf_counter()
    value = await LCEL.ainvoke(INPUTS)
    elapsed = time.perf_counter() - start
    assert value == EXPECTED, value
    return elapsed


def measure(case: Case, runs: int, use_async: bool) -> tuple[list[float], list[float]]:
    if use_async:
        return asyncio.run(ain_rounds(runs, case.one_acall, one_lcel_acall))
    return in_rounds(runs, case.one_call, one_lcel_call)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5000)
    add_arguments(parser)
    args = parser.parse_args()
    case = Case.of(args.parser)
    measure(case, min(500, args.runs), args.use_async)  # warm up both
    chainkit_times, lcel_times = measure(case, args.runs, args.use_async)
    chainkit_median = statistics.median(chainkit_times) * 1e6
    lcel_median = statistics.median(lcel_times) * 1e6
    mode = "async" if args.use_async else "sync"
    print(
        f"{mode} chainkit {case.pipeline!r}: median {chainkit_median:.1f} µs/call; LangChain LCEL "
        f"(ChatPromptTemplate | FakeListChatModel | JsonOutputParser): median "
        f"{lcel_median:.1f} µs/call; chainkit is {lcel_median / chainkit_median:.1f}x faster"
    )


if __name__ == "__main__":
    main()
