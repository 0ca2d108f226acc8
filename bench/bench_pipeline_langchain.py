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

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate

from bench.bench_pipeline import EXPECTED, INPUTS, REPLY, arguments, medians

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


def main() -> None:
    args, case = arguments(__doc__, runs=5000)
    chainkit_median, lcel_median = medians(
        (case.one_call, one_lcel_call), (case.one_acall, one_lcel_acall), args.runs, args.use_async
    )
    mode = "async" if args.use_async else "sync"
    print(
        f"{mode} chainkit {case.pipeline!r}: median {chainkit_median:.1f} µs/call; LangChain LCEL "
        f"(ChatPromptTemplate | FakeListChatModel | JsonOutputParser): median "
        f"{lcel_median:.1f} µs/call; chainkit is {lcel_median / chainkit_median:.1f}x faster"
    )


if __name__ == "__main__":
    main()
