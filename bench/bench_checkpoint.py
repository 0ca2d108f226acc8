"""What checkpointing adds to a step, beside what the database's own commit costs: the scripted
ReAct run of bench_agent_loop.py (6 model calls, 5 tool steps), without a checkpointer and with
a store, alternating; and a bare commit of one row by the same driver, to compare. Run:

    python bench/bench_checkpoint.py [--runs N] [--async] [--synchronous FULL]
                                     [--postgres DSN]

SQLite is measured in a temporary file; PostgreSQL too when a DSN is given (`--postgres`, else
$CHAINKIT_TEST_POSTGRES_DSN), in tables of a schema of its own, dropped at the end. Each tool
step changes the run's state twice (its call started, then completed: one commit each); the
run also saves at its start and its end. Prints, per store, the median of the time a run's
checkpointing adds, divided by its steps and by its commits, and the median bare commit (an
upsert of one row in its own transaction).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agent_loop import SCRIPT, TOOL_NAMES, make_tool
from chainkit import agents, chains, checkpoints
from chainkit.llms import FakeLLM

STEPS = len(SCRIPT) - 1
COMMITS = 2 * STEPS + 2
"""A run's state changes: each step's calls started, then completed; the run's start and end."""
_BARE_UPSERT = (
    "INSERT INTO bench_bare VALUES (1, 'a state''s worth of text') "
    "ON CONFLICT (k) DO UPDATE SET v = excluded.v"
)


def build(store: checkpoints.Checkpointer | None) -> agents.Executor:
    agent = agents.OneShotAgent(FakeLLM(SCRIPT), [make_tool(name) for name in TOOL_NAMES])
    return agents.Executor(agent, max_iterations=10, checkpointer=store)


def one_run(executor: agents.Executor, use_async: bool) -> float:
    llm = executor.agent.llm  # type: ignore[attr-defined]
    llm.calls.clear()
    start = time.perf_counter()
    if use_async:
        answer = asyncio.run(chains.arun(executor, "look up five things"))
    else:
        answer = chains.run(executor, "look up five things")
    elapsed = time.perf_counter() - start
    assert answer == "all five lookups agree"
    return elapsed


def added_per_step(store: checkpoints.Checkpointer, runs: int, use_async: bool) -> float:
    """The median, over `runs` pairs of runs, of what the store added per step (seconds)."""
    plain, saved = build(None), build(store)
    added = []
    for _ in range(runs):
        without = one_run(plain, use_async)
        added.append((one_run(saved, use_async) - without) / STEPS)
    return statistics.median(added)


def median_time(action: Callable[[], object], times: int) -> float:
    spent = []
    for _ in range(times):
        start = time.perf_counter()
        action()
        spent.append(time.perf_counter() - start)
    return statistics.median(spent)


def bare_sqlite_commit(path: Path, synchronous: str, times: int) -> float:
    import sqlite3

    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute(f"PRAGMA synchronous={synchronous}")
    connection.execute("CREATE TABLE bench_bare (k INTEGER PRIMARY KEY, v TEXT)")

    def commit() -> None:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute(_BARE_UPSERT)
        connection.execute("COMMIT")

    try:
        return median_time(commit, times)
    finally:
        connection.close()


def bare_psycopg_commit(dsn: str, times: int) -> float:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("CREATE TABLE bench_bare (k INTEGER PRIMARY KEY, v TEXT)")
        return median_time(lambda: connection.execute(_BARE_UPSERT), times)


@contextmanager
def own_schema(dsn: str) -> Iterator[str]:
    """The DSN with a new schema first on its search path; the schema is dropped after."""
    import psycopg

    schema = f"bench_checkpoint_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    try:
        yield psycopg.conninfo.make_conninfo(dsn, options=f"-csearch_path={schema}")
    finally:
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA {schema} CASCADE")


def line(name: str, per_step: float, bare: float) -> str:
    per_commit = per_step * STEPS / COMMITS
    return (
        f"{name}: {per_step * 1e6:,.0f} µs added per step, {per_commit * 1e6:,.0f} µs per "
        f"state change ({COMMITS} commits a run of {STEPS} steps); a bare commit: "
        f"{bare * 1e6:,.0f} µs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--async", dest="use_async", action="store_true")
    parser.add_argument("--synchronous", choices=["NORMAL", "FULL"], default="NORMAL")
    parser.add_argument("--postgres", default=os.environ.get("CHAINKIT_TEST_POSTGRES_DSN"))
    args = parser.parse_args()
    bare_times = args.runs * COMMITS
    results: list[Any] = [f"{'async' if args.use_async else 'sync'}, {args.runs} runs"]
    with tempfile.TemporaryDirectory() as directory:
        store = checkpoints.SQLiteStore(Path(directory) / "runs.db", synchronous=args.synchronous)
        per_step = added_per_step(store, args.runs, args.use_async)
        store.close()
        bare = bare_sqlite_commit(Path(directory) / "bare.db", args.synchronous, bare_times)
        results.append(line(f"SQLite (synchronous={args.synchronous})", per_step, bare))
    if args.postgres:
        with own_schema(args.postgres) as dsn:
            postgres = checkpoints.PostgresStore(dsn)
            per_step = added_per_step(postgres, args.runs, args.use_async)
            postgres.close()
            results.append(line("PostgreSQL", per_step, bare_psycopg_commit(dsn, bare_times)))
    print("\n".join(results))


if __name__ == "__main__":
    main()
