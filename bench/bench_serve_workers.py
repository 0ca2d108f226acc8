"""Two server processes sharing one PostgreSQL checkpointer under many concurrent clients:
every run is started on one worker and listed, shown and resumed through the other. Run:

    python bench/bench_serve_workers.py [--runs N] [--clients C] [--postgres DSN]

The agent is the approval round trip of the serving tests (a scripted model in the worker,
no network model): each run, streamed (`POST /stream`, read to its last event), pauses for
approval of a `pay` call; then each is read (`GET /runs/{id}`) and resumed with an approval
(`POST /runs/{id}/resume`) through the worker that did not start it, and both workers must
list every run finished. The runs are kept in a schema of their own (PostgreSQL from
`--postgres`, else $CHAINKIT_TEST_POSTGRES_DSN), dropped at the end. Prints, per phase, runs
per second, the p50 and p99 latency of a request, and the failures (a request answered
otherwise than expected, or not at all); exits 1 if any.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_checkpoint import own_schema
from tests.support.approvals import Payments, tool_calling
from tests.support.postgres import DSN_VARIABLE
from tests.support.serving import Answer, call, sse_events
from tests.support.serving_workers import TOKEN_VARIABLE, Worker, workers

TOKEN = "bench-serve-workers-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
REQUEST_SECONDS = 120.0
PAID = "paid 5 to ada"


def worker_app() -> object:
    """The app each worker serves: the payments agent keeping its runs in PostgreSQL, with no
    per-client cap (every bench client shares one address)."""
    from chainkit import agents, checkpoints
    from chainkit.serving import ServerSettings, create_app

    store = checkpoints.PostgresStore(os.environ[DSN_VARIABLE])
    agent = tool_calling(Payments(), ("pay", {"to": "ada", "amount": 5}))
    executor = agents.Executor(agent, checkpointer=store)
    settings = ServerSettings(token=os.environ[TOKEN_VARIABLE], max_runs_per_client=1_000_000)
    return create_app(executor, settings)


@dataclass
class Phase:
    """One phase's figures."""

    name: str
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def line(self, runs: int) -> str:
        ordered = sorted(self.latencies) or [0.0]
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return (
            f"{self.name:<28} {runs / self.seconds:8.1f} runs/s   "
            f"p50 {statistics.median(ordered) * 1000:7.1f} ms   p99 {p99 * 1000:7.1f} ms   "
            f"failures {len(self.failures)}"
        )


def timed_phase(name: str, clients: int, runs: int, request: Callable[[int], str | None]) -> Phase:
    """`request(i)` for each run i, `clients` at once; each returns None, or what failed."""
    phase = Phase(name)

    def one(index: int) -> None:
        started = time.perf_counter()
        try:
            failed = request(index)
        except OSError as error:
            failed = f"{type(error).__name__}: {error}"
        phase.latencies.append(time.perf_counter() - started)
        if failed is not None:
            phase.failures.append(f"run {index}: {failed}")

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(runs)))
    phase.seconds = time.perf_counter() - started
    return phase


def run_id(index: int) -> str:
    return f"bench-{index}"


def started_paused(pair: list[Worker], index: int) -> str | None:
    """Streams run `index` on worker index % 2: it must end paused for one call."""
    body = {"input": "pay ada", "run_id": run_id(index)}
    answer = call(pair[index % 2].url, "POST", "/stream", body, AUTH, REQUEST_SECONDS)
    if answer.status != 200:
        return _refused(answer)
    name, last = sse_events(answer.body)[-1]
    pending = (
        last.get("data", {}).get("outputs", {}).get("pending") if name == "chain_end" else None
    )
    if not pending or len(pending["waiting"]) != 1:
        return f"ended with {name}: {str(last)[:200]}"
    return None


def shown_paused(pair: list[Worker], index: int) -> str | None:
    """Run `index` read through the other worker: paused, one call waiting."""
    answer = call(pair[1 - index % 2].url, "GET", f"/runs/{run_id(index)}", None, AUTH)
    if answer.status != 200:
        return _refused(answer)
    shown = answer.json()
    if shown["status"] != "paused" or len(shown["waiting"]) != 1:
        return f"shown {shown['status']} with {len(shown['waiting'])} waiting"
    return None


def resumed(pair: list[Worker], index: int) -> str | None:
    """Run `index` resumed with an approval through the other worker: it pays."""
    path = f"/runs/{run_id(index)}/resume"
    body: dict[str, Any] = {"decisions": [{"kind": "approve"}]}
    answer = call(pair[1 - index % 2].url, "POST", path, body, AUTH, REQUEST_SECONDS)
    if answer.status != 200:
        return _refused(answer)
    output = answer.json()["outputs"]["output"]
    return None if output == PAID else f"answered {output!r}"


def listed(worker: Worker, status: str) -> set[str]:
    answer = call(worker.url, "GET", f"/runs?status={status}&limit=1000", None, AUTH)
    return {run["run_id"] for run in answer.json()["runs"]}


def _refused(answer: Answer) -> str:
    return f"HTTP {answer.status}: {answer.text[:200]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs in all (at most 1000)")
    parser.add_argument("--clients", type=int, default=1000, help="clients at once")
    parser.add_argument("--postgres", default=os.environ.get(DSN_VARIABLE))
    args = parser.parse_args()
    if not args.postgres:
        parser.error(f"give --postgres DSN, or set {DSN_VARIABLE}")
    if not 1 <= args.runs <= 1000:
        parser.error("--runs must be 1 to 1000 (a listing shows at most 1000 runs)")
    with own_schema(args.postgres) as dsn, tempfile.TemporaryDirectory() as logs:
        env = {DSN_VARIABLE: dsn, TOKEN_VARIABLE: TOKEN}
        with workers(2, env, Path(logs), "bench.bench_serve_workers:worker_app") as pair:
            phases = [
                timed_phase(
                    "stream, pause (worker A|B)",
                    args.clients,
                    args.runs,
                    lambda i: started_paused(pair, i),
                ),
                timed_phase(
                    "show (the other worker)",
                    args.clients,
                    args.runs,
                    lambda i: shown_paused(pair, i),
                ),
                timed_phase(
                    "resume (the other worker)", args.clients, args.runs, lambda i: resumed(pair, i)
                ),
            ]
            expected = {run_id(i) for i in range(args.runs)}
            missing = [len(expected - listed(worker, "finished")) for worker in pair]
    print(f"{args.runs} runs, {args.clients} clients at once, 2 workers, one PostgreSQL store")
    for phase in phases:
        print(phase.line(args.runs))
        for failure in phase.failures[:5]:
            print(f"  {failure}")
    print(f"finished runs missing from each worker's listing: {missing}")
    failed = any(phase.failures for phase in phases) or any(missing)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
