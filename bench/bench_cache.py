"""What a response-cache hit costs: a model call answered from the cache, whole (the key made
of the messages and options, the lookup, the reply built and marked cached, the llm run), in
memory and in a SQLite file, and in PostgreSQL when a DSN is given. Run:

    python bench/bench_cache.py [--calls N] [--messages M] [--async] [--postgres DSN]

The conversation is a system prompt and M-1 turns of about 100 characters each (default M=4);
the reply about 200 characters. Prints the median time per hit over rounds of N calls, beside
an uncached call of the same scripted model (the floor any call pays), and the bound issue 33
sets: 50 µs in memory, 0.5 ms with SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit import llms
from chainkit.llms.cache import ResponseCache
from chainkit.schema import Message

ROUNDS = 15
REPLY = "The capital of France is Paris, on the Seine; it has been the capital since 987. " * 2
BOUNDS = {"memory": 50e-6, "sqlite": 0.5e-3}


def conversation(size: int) -> list[Message]:
    turns = [Message.system("You answer questions about geography in one or two sentences.")]
    for number in range(1, size):
        text = f"Question {number}: which city is the capital of the country numbered {number}?"
        turns.append(Message.user(text) if number % 2 else Message.assistant(text))
    return turns


def per_call(call: Callable[[], Any], calls: int) -> float:
    """The median, over rounds of `calls` calls, of the seconds one call took."""
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        rounds.append((time.perf_counter() - start) / calls)
    return statistics.median(rounds)


def per_async_call(model: llms.BaseModel, messages: list[Message], calls: int) -> float:
    async def main() -> float:
        rounds = []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            for _ in range(calls):
                await model.agenerate(messages, temperature=0)
            rounds.append((time.perf_counter() - start) / calls)
        return statistics.median(rounds)

    return asyncio.run(main())


def hit_time(cache: ResponseCache | None, messages: list[Message], calls: int, use_async: bool):
    """Seconds per call of a scripted model with `cache` (its first call fills it)."""
    model = llms.FakeLLM([REPLY] * (ROUNDS * calls + 1), cache=False if cache is None else cache)
    model.generate(messages, temperature=0)
    if use_async:
        return per_async_call(model, messages, calls)
    return per_call(lambda: model.generate(messages, temperature=0), calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per round")
    parser.add_argument("--messages", type=int, default=4, help="messages in the conversation")
    parser.add_argument("--async", dest="use_async", action="store_true")
    parser.add_argument("--postgres", default=os.environ.get("CHAINKIT_TEST_POSTGRES_DSN"))
    options = parser.parse_args()
    messages = conversation(options.messages)
    calls = options.calls
    print(f"{len(messages)} messages, {'async' if options.use_async else 'sync'} calls")
    floor = hit_time(None, messages, calls, options.use_async)
    print(f"uncached scripted call: {floor * 1e6:8.1f} µs")
    with tempfile.TemporaryDirectory() as folder:
        caches: dict[str, ResponseCache] = {
            "memory": llms.InMemoryCache(),
            "sqlite": llms.SQLCache(Path(folder) / "cache.db"),
        }
        if options.postgres:
            caches["postgresql"] = llms.SQLCache(options.postgres)
        for name, cache in caches.items():
            # A database round trip per call: fewer calls, the same rounds.
            count = calls if name == "memory" else max(calls // 10, 1)
            spent = hit_time(cache, messages, count, options.use_async)
            bound = BOUNDS.get(name)
            verdict = "" if bound is None else f"  (bound {bound * 1e6:g} µs: "
            if bound is not None:
                verdict += "met)" if spent <= bound else "MISSED)"
            print(f"hit, {name:10}: {spent * 1e6:8.1f} µs{verdict}")
            if name == "postgresql":
                cache.clear()


if __name__ == "__main__":
    main()
