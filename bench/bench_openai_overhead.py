"""Per-request overhead of chainkit's `OpenAI.generate` over a bare openai client call.

Both send the same chat request to the same loopback server (tests/support/openai_server.py, started
here) over a kept-alive connection; the two kinds of request are interleaved, alternating
which goes first, so drift in the machine's speed hits both alike. Reports the median time
of each and the difference. Run from the repository root:

    python bench/bench_openai_overhead.py [--requests N] [--stream]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openai

from chainkit.llms.openai.chat import OpenAI
from chainkit.schema import Message
from tests.support.openai_server import OpenAIServer, Reply

KEY = "sk-bench-0123456789abcdef"
MODEL = "bench-model"
QUESTION = "In one paragraph: why do agents need tools?"
ANSWER = (
    "Agents need tools because a language model alone only predicts text: it cannot look up "
    "today's weather, run a calculation exactly, or read a file. Tools give it reach and "
    "precision, and the loop of thought, action and observation lets it check its work."
)


def chainkit_call(llm: OpenAI, stream: bool) -> Callable[[], str]:
    messages = [Message.user(QUESTION)]
    if stream:
        return lambda: llm.generate(messages, streaming_func=lambda _: None).content
    return lambda: llm.generate(messages).content


def bare_call(client: openai.OpenAI, stream: bool) -> Callable[[], str]:
    messages: list[openai.types.chat.ChatCompletionMessageParam] = [
        {"role": "user", "content": QUESTION}
    ]

    def plain() -> str:
        completion = client.chat.completions.create(model=MODEL, messages=messages)
        return completion.choices[0].message.content or ""

    def streamed() -> str:
        chunks = client.chat.completions.create(
            model=MODEL, messages=messages, stream=True, stream_options={"include_usage": True}
        )
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    return streamed if stream else plain


def timed(call: Callable[[], str]) -> float:
    start = time.perf_counter()
    answer = call()
    elapsed = time.perf_counter() - start
    assert answer == ANSWER, answer
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=800, help="timed requests of each kind")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--stream", action="store_true", help="streamed replies (SSE)")
    args = parser.parse_args()

    with OpenAIServer() as server:
        server.push(*[Reply(ANSWER, chunk_size=16)] * (2 * (args.requests + args.warmup)))
        llm = OpenAI(MODEL, base_url=server.base_url, api_key=KEY)
        client = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0, timeout=60)
        ours, bare = chainkit_call(llm, args.stream), bare_call(client, args.stream)
        for _ in range(args.warmup):
            timed(ours)
            timed(bare)
        ours_times: list[float] = []
        bare_times: list[float] = []
        for i in range(args.requests):
            if i % 2:
                ours_times.append(timed(ours))
                bare_times.append(timed(bare))
            else:
                bare_times.append(timed(bare))
                ours_times.append(timed(ours))
        llm.close()
        client.close()

    ours_median = statistics.median(ours_times) * 1e6
    bare_median = statistics.median(bare_times) * 1e6
    overhead = ours_median - bare_median
    kind = "streamed" if args.stream else "plain"
    print(f"{args.requests} {kind} requests each, interleaved, loopback server")
    print(f"  bare openai client : median {bare_median:8.1f} µs/request")
    print(f"  chainkit OpenAI    : median {ours_median:8.1f} µs/request")
    print(f"  overhead           : {overhead:+8.1f} µs/request ({overhead / bare_median:+.1%})")


if __name__ == "__main__":
    main()
