"""Throughput at N concurrent runs: the bare openai SDK's floor against chainkit's async
Executor (and LangChain's, when installed), against one loopback server, in one run.

Each run is a 3-call ReAct run: two tool steps and a final answer. The server (stdlib asyncio,
in a process of its own) answers every chat request after a fixed 100 ms, so a run takes at
least 300 ms and throughput is bounded by what the client side spends per request. The bare
floor sends the same three requests with `AsyncOpenAI` and nothing else: no prompt template,
no parsing, no tools. Per N, the frameworks take turns within each round (so drift in the
machine's speed hits all alike), and the median of the rounds is reported, with chainkit's
ratio to the floor. The server reports its CPU time over each measurement; more than 70% of
a core means the server, not the client, may be the limit, and the row is flagged.

Memory: peak RSS growth of a fresh process running 1,000 concurrent runs, per framework.

    python bench/bench_concurrency.py [--n 1 100 1000] [--rounds 3] [--min-runs 20]
                                      [--no-memory] [--profile N]

`--profile N` runs chainkit alone at N under cProfile and prints the top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

LATENCY = 0.1
MODEL = "bench-model"
KEY = "sk-bench-0123456789abcdef"
QUESTION = "What is (2 + 2) * 3?"
REPLIES = [
    " Step one: add first.\nAction: Calculator\nAction Input: 2 + 2",
    " Step two: now multiply.\nAction: Calculator\nAction Input: 4 * 3",
    " I now know the final answer.\nFinal Answer: 12",
]
"""What the server answers to the first, second and third request of a run: which one it is,
it tells by the markers of the earlier replies, which every framework echoes back."""
MARKERS = (b"Step one", b"Step two")
SERVER_BUSY = 0.7
"""Server CPU time per wall second above which a row is flagged."""

Run = Callable[[], Awaitable[str]]


# The server, in its own process.


def _reply_bytes(text: str) -> bytes:
    body = json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220},
        }
    ).encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(
        body
    )
    return head + body


async def _serve() -> None:
    replies = [_reply_bytes(text) for text in REPLIES]
    served = 0

    def stats() -> bytes:
        data = json.dumps(
            {"requests": served, "cpu": time.process_time(), "wall": time.monotonic()}
        ).encode()
        return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = await reader.readexactly(length) if length else b""
                if head.startswith(b"GET /stats"):
                    writer.write(stats())
                    continue
                await asyncio.sleep(LATENCY)
                step = 2 if MARKERS[1] in body else 1 if MARKERS[0] in body else 0
                served += 1
                writer.write(replies[step])
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    loop = asyncio.get_running_loop()
    # Serve until the bench closes our stdin, then leave at once: connections still open
    # are the clients' business.
    await loop.run_in_executor(None, sys.stdin.read)
    os._exit(0)


@contextlib.contextmanager
def server_process() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def server_stats(base_url: str) -> dict[str, float]:
    url = base_url.removesuffix("/v1") + "/stats"
    with urllib.request.urlopen(url, timeout=10) as response:
        stats: dict[str, float] = json.loads(response.read())
    return stats


# The contenders: each makes an async function doing one whole run, in the running loop.


async def bare_sdk(base_url: str) -> tuple[Run, Callable[[], Awaitable[None]]]:
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0, timeout=60)

    async def run() -> str:
        prompt = QUESTION
        text = ""
        for _ in range(3):
            completion = await client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": prompt}],
                stop=["\nObservation:"],
            )
            text = completion.choices[0].message.content or ""
            prompt = f"{prompt}{text}\nObservation: 4\nThought:"
        return text.rpartition("Final Answer: ")[2]

    return run, client.close


async def chainkit_executor(base_url: str) -> tuple[Run, Callable[[], Awaitable[None]]]:
    from chainkit import agents, chains, llms, tools

    llm = llms.OpenAI(MODEL, base_url=base_url, api_key=KEY, max_attempts=1)
    executor = agents.Executor(agents.OneShotAgent(llm, [tools.Calculator()]))

    async def run() -> str:
        return await chains.arun(executor, QUESTION)

    return run, llm.aclose


async def langchain_executor(base_url: str) -> tuple[Run, Callable[[], Awaitable[None]]]:
    from langchain_classic.agents import AgentExecutor, ZeroShotAgent
    from langchain_core.tools import Tool
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(model=MODEL, base_url=base_url, api_key=KEY, max_retries=0)
    calculator = Tool(name="Calculator", func=lambda text: "4", description="does arithmetic")
    agent = ZeroShotAgent.from_llm_and_tools(llm, [calculator])
    executor = AgentExecutor(agent=agent, tools=[calculator])

    async def run() -> str:
        outputs = await executor.ainvoke({"input": QUESTION})
        return str(outputs["output"])

    async def close() -> None:
        pass

    return run, close


CONTENDERS: dict[str, Callable[[str], Awaitable[tuple[Run, Callable[[], Awaitable[None]]]]]] = {
    "bare SDK": bare_sdk,
    "chainkit": chainkit_executor,
    "LangChain": langchain_executor,
}


def langchain_installed() -> bool:
    import importlib.util

    return all(
        importlib.util.find_spec(name) is not None
        for name in ("langchain_classic", "langchain_core", "langchain_openai")
    )


# Measuring.


async def runs_per_second(name: str, base_url: str, concurrency: int, runs: int) -> float:
    """`runs` runs, `concurrency` at a time, after a few to warm up; their rate."""
    run, close = await CONTENDERS[name](base_url)
    try:
        for answer in await asyncio.gather(*(run() for _ in range(min(concurrency, 10)))):
            assert answer == "12", answer
        per_worker, extra = divmod(runs, concurrency)

        async def worker(count: int) -> None:
            for _ in range(count):
                answer = await run()
                assert answer == "12", answer

        start = time.perf_counter()
        await asyncio.gather(*(worker(per_worker + (i < extra)) for i in range(concurrency)))
        return runs / (time.perf_counter() - start)
    finally:
        await close()


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_growth(name: str, base_url: str, concurrency: int) -> int:
    """Growth of this process's RSS, at its highest, while `concurrency` runs are in flight."""

    async def main() -> int:
        run, close = await CONTENDERS[name](base_url)
        try:
            await run()  # imports and first-use setup are not the runs' memory
            before = rss_bytes()
            peak = before
            done = asyncio.Event()

            async def sample() -> None:
                nonlocal peak
                while not done.is_set():
                    peak = max(peak, rss_bytes())
                    await asyncio.sleep(0.01)

            sampler = asyncio.ensure_future(sample())
            await asyncio.gather(*(run() for _ in range(concurrency)))
            done.set()
            await sampler
            return peak - before
        finally:
            await close()

    return asyncio.run(main())


def memory_row(name: str, base_url: str, concurrency: int) -> int:
    """Peak RSS growth measured in a fresh process, so no other contender's memory counts."""
    result = subprocess.run(
        [sys.executable, __file__, "--memory-of", name, "--url", base_url, "--n", str(concurrency)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return int(result.stdout.split()[-1])


def profile(base_url: str, concurrency: int, runs: int) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    rate = asyncio.run(runs_per_second("chainkit", base_url, concurrency, runs))
    profiler.disable()
    print(f"chainkit at N={concurrency}: {rate:.1f} runs/s under cProfile")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, nargs="+", default=[1, 100, 1000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-runs", type=int, default=20, help="runs per measurement, at least")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--profile", type=int, metavar="N")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--memory-of", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve())
        return
    if args.memory_of:
        print(peak_rss_growth(args.memory_of, args.url, args.n[0]))
        return

    names = ["bare SDK", "chainkit"] + (["LangChain"] if langchain_installed() else [])
    with server_process() as base_url:
        if args.profile:
            profile(base_url, args.profile, max(args.profile, args.min_runs))
            return
        asyncio.run(compare(names, base_url, args))
        if not args.no_memory:
            print("peak RSS growth with 1,000 runs in flight:")
            for name in names:
                growth = memory_row(name, base_url, 1000)
                print(
                    f"  {name:>10}: {growth / 2**20:6.1f} MiB ({growth / 1000 / 1024:.1f} KiB/run)"
                )


async def compare(names: list[str], base_url: str, args: argparse.Namespace) -> None:
    """The table, measured in one event loop (LangChain keeps its HTTP clients across calls,
    bound to the loop that made them)."""
    print(
        f"{len(REPLIES)}-call ReAct runs, {LATENCY * 1000:.0f} ms per reply, median of "
        f"{args.rounds} rounds (runs/s){'' if len(names) > 2 else '; LangChain not installed'}"
    )
    header = f"{'N':>6} | " + " | ".join(f"{name:>10}" for name in names)
    print(header + " | chainkit/bare | server CPU")
    for concurrency in args.n:
        runs = max(concurrency, args.min_runs)
        rates: dict[str, list[float]] = {name: [] for name in names}
        busiest = 0.0
        for _ in range(args.rounds):
            for name in names:
                before = server_stats(base_url)
                rates[name].append(await runs_per_second(name, base_url, concurrency, runs))
                after = server_stats(base_url)
                load = (after["cpu"] - before["cpu"]) / (after["wall"] - before["wall"])
                busiest = max(busiest, load)
        medians = {name: statistics.median(values) for name, values in rates.items()}
        ratio = medians["chainkit"] / medians["bare SDK"]
        flag = "  (server busy: a limit here)" if busiest > SERVER_BUSY else ""
        print(
            f"{concurrency:>6} | "
            + " | ".join(f"{medians[name]:>10.1f}" for name in names)
            + f" | {ratio:>13.2f} | {busiest:>9.0%}{flag}"
        )


if __name__ == "__main__":
    main()
