"""What OpenTelemetryHandler adds to bench_agent_loop's run, over the OpenTelemetry API alone
(no SDK set up, so its no-op tracer): the cost of chainkit's side of the spans. Run:

    python bench/bench_otel.py [--runs N]

Each run is 12 spans (the executor, 6 model calls, 5 tool calls). Rounds of plain and traced
runs alternate, so a slower stretch of a shared machine hits both alike.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agent_loop import build
from chainkit import chains
from chainkit.callbacks import Handler, OpenTelemetryHandler

SPANS_PER_RUN = 12


def timed_runs(runs: int, handler: Handler | None) -> list[float]:
    executor, llm = build(log=False)
    times = []
    for _ in range(runs):
        llm.calls.clear()
        start = time.perf_counter()
        answer = chains.run(executor, "look up five things", callbacks=handler)
        times.append(time.perf_counter() - start)
        assert answer == "all five lookups agree"
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    handler = OpenTelemetryHandler()
    timed_runs(300, None)
    timed_runs(300, handler)
    plain: list[float] = []
    traced: list[float] = []
    for _ in range(args.rounds):
        plain += timed_runs(args.runs // args.rounds, None)
        traced += timed_runs(args.runs // args.rounds, handler)
    base = statistics.median(plain) * 1e6
    with_otel = statistics.median(traced) * 1e6
    added = (with_otel - base) / SPANS_PER_RUN
    print(
        f"{len(plain)} runs each: median {base:.1f} µs/run without a handler, "
        f"{with_otel:.1f} µs/run with OpenTelemetryHandler (API only): "
        f"{added:.1f} µs added per span"
    )


if __name__ == "__main__":
    main()
