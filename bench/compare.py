"""Paired rounds of one benchmark on two checkouts, to tell whether a change is slower.

On a shared machine one process differs from the next by several percent (hash seed, where the
code lands in memory, other work), more than many changes do. Each round here runs the
benchmark once on each checkout with the same PYTHONHASHSEED, on the same CPU when `taskset`
is there, the order alternating between rounds; what is reported is each side's median and the
per-round difference. Run:

    python bench/compare.py OLD_CHECKOUT NEW_CHECKOUT [--rounds 20] \\
        -- bench/bench_agent_loop.py --runs 5000

The benchmark must print its figure as "median <number>" (as every script here does).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

_MEDIAN = re.compile(r"median ([0-9.]+)")


def one_run(checkout: Path, command: list[str], seed: int) -> float:
    """The benchmark's median figure, run from `checkout` with its own package first."""
    pinned = ["taskset", "-c", "1"] if shutil.which("taskset") and os.cpu_count() != 1 else []
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(checkout)}
    output = subprocess.run(
        [*pinned, sys.executable, *command],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = _MEDIAN.search(output)
    if found is None:
        raise SystemExit(f"no 'median <number>' in the output of {command}: {output!r:.200}")
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="checkout to compare against")
    parser.add_argument("new", type=Path, help="checkout with the change")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("command", nargs="+", help="the benchmark script and its arguments")
    args = parser.parse_args()
    pairs = []
    for seed in range(1, args.rounds + 1):
        first, second = (args.old, args.new) if seed % 2 else (args.new, args.old)
        figures = {first: one_run(first, args.command, seed)}
        figures[second] = one_run(second, args.command, seed)
        pairs.append((figures[args.old], figures[args.new]))
    differences = [new - old for old, new in pairs]
    print(f"old median {statistics.median(old for old, _ in pairs):.1f}")
    print(f"new median {statistics.median(new for _, new in pairs):.1f}")
    print(
        f"new - old per round: median {statistics.median(differences):+.2f}, "
        f"mean {statistics.mean(differences):+.2f}; "
        f"new faster in {sum(d < 0 for d in differences)} of {len(differences)} rounds"
    )


if __name__ == "__main__":
    main()
