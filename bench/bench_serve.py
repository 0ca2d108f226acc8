"""What serving an agent costs. `serving.create_app`'s app runs on one uvicorn worker, in a
process of its own, under `serving.http_server` as `chainkit serve` runs it. The agent is a
OneShotAgent on `llms.OpenAI` pointed at the loopback OpenAI-compatible server
(tests/support/openai_server.py, in a third process), with one tool: each run is two model
calls and a tool call. The model answers from the request (a tool call, then once it sees the
tool's result, the final answer), so runs may interleave freely.

- load: `--clients` clients at once, each from a loopback address of its own (as many hosts
  would), POST /stream and read every event; a client fails unless its stream ends with the
  agent's answer. Failures are counted by kind.
- overhead: `--runs` runs one at a time over one kept-alive connection, through POST /invoke
  and POST /stream, against the same agent run in this process (the four interleaved, so
  drift hits each alike): /invoke against `chains.acall`, /stream against `chains.astream`
  with each event made plain (`to_dict`, what /stream sends). The server's own cost of a run
  is its served time minus that of the in-process run just before it (paired, so that the
  machine's load, which drifts, weighs on both alike); its p50 and p99 are reported, with
  the server's CPU time per run minus this process's for the in-process run.
- idle streams: `--idle` streams of a chain that waits forever, held open once their first
  event came; the server process's resident memory grows by this much per stream.

Run: python bench/bench_serve.py [--clients 1000] [--runs 1000] [--idle 1000] [--traces-kept N]
(`--traces-kept 0`: the server keeps no traces for the trace page, and records none)
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit import agents, chains, llms, tools
from tests.support.stub_chains import WaitsForever

TOKEN = "bench-token"
QUESTION = "what does the lookup say?"
TOOL_RESULT = "lookup-result-7f3a"
ANSWER = "the lookup says 7f3a"
FIRST_REPLY = " I should look it up.\nAction: lookup\nAction Input: the word\n"
LAST_REPLY = f" I now know the final answer.\nFinal Answer: {ANSWER}\n"
CLIENT_SECONDS = 300.0
"""How long one client of the load waits for its stream to end before it counts as failed."""


# The two processes the benchmark starts: the model server and the chainkit server.


def serve_model() -> None:
    """The loopback OpenAI-compatible server; prints its URL, stops when stdin closes."""
    from tests.support.openai_server import OpenAIServer, Reply

    def reply_to(body: dict[str, Any]) -> Reply:
        seen_tool = TOOL_RESULT in json.dumps(body.get("messages"))
        return Reply(LAST_REPLY if seen_tool else FIRST_REPLY, chunk_size=64)

    with OpenAIServer() as server:
        server.replier = reply_to
        print(server.base_url, flush=True)
        sys.stdin.read()


class Lookup(tools.Tool):
    name = "lookup"
    description = "looks a word up; input is the word"
    blocking = False

    def call(self, input: str) -> str:
        return TOOL_RESULT


def model_at(model_url: str) -> llms.OpenAI:
    return llms.OpenAI("scripted", base_url=model_url, api_key="sk-bench")


def agent(model: llms.OpenAI) -> agents.Executor:
    return agents.Executor(agents.OneShotAgent(model, [Lookup()]), max_iterations=3)


def serve_chain(kind: str, model_url: str, port: int, traces_kept: int | None) -> None:
    from chainkit.serving import ServerSettings, create_app, http_server

    chain = agent(model_at(model_url)) if kind == "agent" else WaitsForever()
    settings = ServerSettings(token=TOKEN)
    if traces_kept is not None:
        settings = dataclasses.replace(settings, traces_kept=traces_kept)
    app = create_app(chain, settings)
    http_server(app, host="127.0.0.1", port=port, log_level="warning").run()


# The client: HTTP/1.1 over asyncio's streams, nothing between the benchmark and the wire.


class Client:
    """One connection to the server, kept alive; from `local_host` when given."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int, local_host: str | None = None) -> Client:
        local = None if local_host is None else (local_host, 0)
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=local)
        return cls(reader, writer)

    def send(self, path: str, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data
        )

    async def head(self) -> tuple[int, dict[str, str]]:
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        fields = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        return int(lines[0].split(" ", 2)[1]), {k.lower(): v for k, v in fields.items()}

    async def chunk(self) -> bytes:
        """The next piece of a chunked body; b"" at its end."""
        size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
        data = await self.reader.readexactly(size + 2)
        return data[:-2]

    async def exchange(self, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        self.send(path, body)
        status, headers = await self.head()
        if "content-length" in headers:
            return status, await self.reader.readexactly(int(headers["content-length"]))
        parts = []
        while part := await self.chunk():
            parts.append(part)
        return status, b"".join(parts)

    def close(self) -> None:
        self.writer.close()


def host_of(number: int) -> str:
    """A loopback address of its own for client `number` (Linux routes all of 127/8 to lo)."""
    return f"127.1.{number // 250}.{number % 250 + 1}"


def final_answer(stream: bytes) -> str | None:
    """The agent's answer in the last event of a stream, if that is the chain's end."""
    last = stream.decode().rstrip("\n").rsplit("\n\n", 1)[-1]
    name, _, data = last.partition("\ndata: ")
    if name != "event: chain_end":
        return None
    answer: str | None = json.loads(data)["data"]["outputs"].get("output")
    return answer


# The three figures.


async def one_streaming_client(port: int, number: int) -> tuple[str, float]:
    started = time.perf_counter()
    try:
        client = await Client.open(port, host_of(number))
    except OSError as error:
        return f"connect: {type(error).__name__}", 0.0
    try:
        async with asyncio.timeout(CLIENT_SECONDS):
            status, stream = await client.exchange("/stream", {"input": QUESTION})
    except TimeoutError:
        return "timed out", 0.0
    except (OSError, asyncio.IncompleteReadError, ValueError) as error:
        return f"read: {type(error).__name__}", 0.0
    finally:
        client.close()
    if status != 200:
        return f"status {status}", 0.0
    if final_answer(stream) != ANSWER:
        return "no answer at the end", 0.0
    return "ok", time.perf_counter() - started


async def load(port: int, clients: int) -> None:
    started = time.perf_counter()
    outcomes = await asyncio.gather(*(one_streaming_client(port, n) for n in range(clients)))
    wall = time.perf_counter() - started
    kinds = Counter(kind for kind, _ in outcomes)
    times = sorted(seconds for kind, seconds in outcomes if kind == "ok")
    failed = clients - kinds["ok"]
    detail = ", ".join(f"{kind}: {count}" for kind, count in kinds.items() if kind != "ok")
    print(
        f"load: {clients} streaming clients at once, {failed} failed{f' ({detail})' * bool(failed)}"
        f"; all done in {wall:.1f} s ({clients / wall:.0f} runs/s); a client's stream took "
        f"p50 {percentile(times, 50):.2f} s, p99 {percentile(times, 99):.2f} s"
    )


def percentile(values: list[float], rank: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * rank / 100))]


def cpu_ms(pid: int) -> float:
    """The CPU time all threads of process `pid` have run, in ms (Linux's schedstat: ns, not
    the 10 ms ticks of /proc/PID/stat), so a run's CPU is measured however loaded the machine
    is, where its wall time is not."""
    tasks = f"/proc/{pid}/task"
    total = 0
    for task in os.listdir(tasks):
        with open(f"{tasks}/{task}/schedstat") as schedstat:
            total += int(schedstat.read().split()[0])
    return total / 1e6


async def overhead(port: int, server_pid: int, model_url: str, runs: int, warmup: int) -> None:
    model = model_at(model_url)
    in_process = agent(model)
    client = await Client.open(port)

    async def local() -> None:
        outputs = await chains.acall(in_process, {"input": QUESTION})
        assert outputs["output"] == ANSWER, outputs

    async def local_events() -> None:
        events = [event.to_dict() async for event in chains.astream(in_process, QUESTION)]
        assert events[-1]["data"]["outputs"]["output"] == ANSWER, events[-1]

    async def served(path: str) -> None:
        status, body = await client.exchange(path, {"input": QUESTION})
        assert status == 200, body[:300]

    # Each way, the process whose CPU time it takes: this one's, or the server's.
    ways = {
        "chains.acall": (local, os.getpid()),
        "POST /invoke": (lambda: served("/invoke"), server_pid),
        "chains.astream": (local_events, os.getpid()),
        "POST /stream": (lambda: served("/stream"), server_pid),
    }
    against = {"POST /invoke": "chains.acall", "POST /stream": "chains.astream"}
    times: dict[str, list[float]] = {name: [] for name in ways}
    cpu: dict[str, float] = dict.fromkeys(ways, 0.0)
    for run in range(warmup + runs):
        for name, (way, pid) in ways.items():
            cpu_before, started = cpu_ms(pid), time.perf_counter()
            await way()
            seconds, cpu_taken = time.perf_counter() - started, cpu_ms(pid) - cpu_before
            if run >= warmup:
                times[name].append(seconds * 1000)
                cpu[name] += cpu_taken / runs
    client.close()
    await model.aclose()
    print(f"overhead: {runs} runs one at a time (after {warmup} to warm up), in ms")
    columns = f"{'p50':>7} {'p99':>7} {'CPU':>7}"
    print(f"  {'':15} {columns}   server's own: {'p50':>6} {'p99':>6} {'CPU':>6}")
    for name, values in times.items():
        p50, p99 = percentile(values, 50), percentile(values, 99)
        extra = ""
        if name in against:
            base = against[name]
            own = [a - b for a, b in zip(values, times[base], strict=True)]
            own50, own99 = percentile(own, 50), percentile(own, 99)
            extra = f"{'':16}{own50:>+6.2f} {own99:>+6.2f} {cpu[name] - cpu[base]:>+6.2f}"
        print(f"  {name:15} {p50:>7.2f} {p99:>7.2f} {cpu[name]:>7.2f}{extra}")
    print("  (CPU: of this process in-process, of the server process served; p50/p99: wall time)")


async def idle_stream(port: int, number: int) -> Client:
    client = await Client.open(port, host_of(number))
    client.send("/stream", {"input": "wait"})
    status, _ = await client.head()
    assert status == 200, status
    assert b"event: chain_start" in await client.chunk()
    return client


async def idle_memory(port: int, pid: int, count: int) -> None:
    warm = [await idle_stream(port, n) for n in range(20)]
    for client in warm:
        client.close()
    await asyncio.sleep(1.0)
    before = resident_kb(pid)
    held: list[Client] = []
    for start in range(0, count, 100):
        numbers = range(start, min(count, start + 100))
        held += await asyncio.gather(*(idle_stream(port, n) for n in numbers))
    await asyncio.sleep(1.0)
    after = resident_kb(pid)
    for client in held:
        client.close()
    await asyncio.sleep(2.0)
    closed = resident_kb(pid)
    print(
        f"idle streams: {count} held open: server RSS {before / 1024:.1f} MB -> "
        f"{after / 1024:.1f} MB, {(after - before) / count:.1f} KB per stream "
        f"({closed / 1024:.1f} MB once they closed)"
    )


def resident_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


# Running it all.


def started(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def free_port() -> int:
    from tests.support.serving import free_port as port

    return port()


async def until_healthy(port: int, process: subprocess.Popen[str]) -> None:
    for _ in range(600):
        if process.poll() is not None:
            raise RuntimeError("the server exited")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return
    raise RuntimeError("the server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=1000, help="streams at once (0: skip)")
    parser.add_argument("--runs", type=int, default=1000, help="runs timed one at a time")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--idle", type=int, default=1000, help="idle streams held (0: skip)")
    parser.add_argument(
        "--traces-kept", type=int, default=None, help="the server's traces_kept (0: no traces)"
    )
    parser.add_argument("--role", choices=["bench", "model", "agent", "waits"], default="bench")
    parser.add_argument("--model-url", default="")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a socket per client
    if args.role == "model":
        serve_model()
    elif args.role in ("agent", "waits"):
        serve_chain(args.role, args.model_url, args.port, args.traces_kept)
    else:
        bench(args)


def bench(args: argparse.Namespace) -> None:
    model = started("--role", "model")
    assert model.stdout is not None
    model_url = model.stdout.readline().strip()
    port = free_port()
    traces = [] if args.traces_kept is None else ["--traces-kept", str(args.traces_kept)]
    server = started("--role", "agent", "--model-url", model_url, "--port", str(port), *traces)
    print("serving an agent (2 model calls + 1 tool call per run) on one uvicorn worker")
    try:
        asyncio.run(until_healthy(port, server))
        if args.clients:
            asyncio.run(load(port, args.clients))
        if args.runs:
            asyncio.run(overhead(port, server.pid, model_url, args.runs, args.warmup))
    finally:
        server.terminate()
        server.wait()
    if args.idle:
        port = free_port()
        waits = started("--role", "waits", "--port", str(port))
        try:
            asyncio.run(until_healthy(port, waits))
            asyncio.run(idle_memory(port, waits.pid, args.idle))
        finally:
            waits.terminate()
            waits.wait()
    model.communicate()


if __name__ == "__main__":
    main()
