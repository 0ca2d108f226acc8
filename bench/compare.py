"""Paired rounds of one benchmark on two checkouts, to tell whether a change is slower.

On a shared machine one process differs from the next by several percent (hash seed, where the
code lands in memory, other work), more than many changes do. Each round here runs the
benchmark once on each checkout with the same PYTHONHASHSEED, on the same CPU when `taskset`
is there, the order alternating between rounds; what is reported, for every figure the
benchmark prints, is each side's median and the per-round difference. Run:

    python bench/compare.py OLD_CHECKOUT NEW_CHECKOUT [--rounds 20] \\
        -- bench/bench_agent_loop.py --runs 5000

Any benchmark's output is read as it is: a figure is a number on a line, named by that line
with its numbers written as `#` and its spaces collapsed (and by how often that line came
before, for a table's rows).
Numbers that are the same in every output (run counts, sizes, a table's first column) are
labels, not measurements, and are left out. The unit after a figure says which way is better:
a time, a size, a ratio (`x`) or a percentage is better lower, a rate (`/s`) higher; a figure
without a unit (a table cell) is reported as higher or lower only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Literal

# A number standing alone: not part of a word ("p90", "gpt-4o", "CVE-2024-58340").
_NUMBER = re.compile(r"(?<![\w.-])[-+]?\d+(?:,\d{3})*+(?:\.\d+)?+")
_UNIT = re.compile(r"[ \t]*+([^\s,;:()|]*+)")
_LOWER_IS_BETTER = frozenset(("µs", "us", "ns", "ms", "s", "MiB", "KiB", "MB", "GB", "x", "%"))

Better = Literal["lower", "higher", "unknown"]
Key = tuple[str, int, int, Better]
"""Where a figure stands: its line with `#` for each number, how often that line came before
(a table's rows), which number of the line it is, and which way it is better."""


def figures(output: str) -> dict[Key, float]:
    """Every number of `output`, by where it stands."""
    found: dict[Key, float] = {}
    seen: Counter[str] = Counter()
    for line in output.splitlines():
        numbers = list(_NUMBER.finditer(line))
        label = " ".join(_NUMBER.sub("#", line).split())  # so column widths do not count
        for position, number in enumerate(numbers):
            key = (label, seen[label], position, better(line[number.end() :]))
            found[key] = float(number.group().replace(",", ""))
        seen[label] += 1
    return found


def better(after: str) -> Better:
    """Which way a figure is better, read from its unit at the start of `after`."""
    unit = _UNIT.match(after).group(1)  # type: ignore[union-attr]  # it matches any text
    if "/s" in unit:
        return "higher"
    return "lower" if unit.split("/")[0] in _LOWER_IS_BETTER else "unknown"


def one_run(checkout: Path, command: list[str], seed: int) -> dict[Key, float]:
    """The benchmark's figures, run from `checkout` with its own package first."""
    pinned = ["taskset", "-c", "1"] if shutil.which("taskset") and os.cpu_count() != 1 else []
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [*pinned, sys.executable, *command], cwd=checkout, env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"{command} failed in {checkout}:\n{done.stderr[-2000:]}")
    output = done.stdout
    found = figures(output)
    if not found:
        raise SystemExit(f"no figure in the output of {command}: {output!r:.200}")
    return found


Pair = tuple[dict[Key, float], dict[Key, float]]
"""One round's figures: the old checkout's, the new one's."""


def report(pairs: list[Pair]) -> list[str]:
    """Two lines per measured figure: where it stands, then both sides' medians and the
    per-round difference; figures missing from any output are left out."""
    shared = set.intersection(*(set(old) & set(new) for old, new in pairs))
    lines = []
    for key in (key for key in pairs[0][0] if key in shared):
        olds = [old[key] for old, _ in pairs]
        news = [new[key] for _, new in pairs]
        if len(set(olds + news)) > 1:  # else a label: the same in every output
            lines.append(_line(key, olds, news))
    return lines


def _line(key: Key, olds: list[float], news: list[float]) -> str:
    differences = [new - old for old, new in zip(olds, news, strict=True)]
    old_median = statistics.median(olds)
    change = statistics.median(differences)
    relative = f" ({change / old_median:+.1%})" if old_median else ""
    label, _, position, way = key
    if way == "unknown":
        verdict = f"new higher in {sum(d > 0 for d in differences)}"
    else:
        wins = sum(d > 0 if way == "higher" else d < 0 for d in differences)
        verdict = f"new better ({way} is better) in {wins}"
    shown = "".join(
        part + ("@" if index == position else "#" if index < label.count("#") else "")
        for index, part in enumerate(label.split("#"))
    )
    return (
        f"{shown}\n    old median {old_median:g}, new median {statistics.median(news):g}; "
        f"new - old per round: median {change:+g}{relative}, mean "
        f"{statistics.mean(differences):+g}; {verdict} of {len(differences)} rounds"
    )


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
        found = {first: one_run(first, args.command, seed)}
        found[second] = one_run(second, args.command, seed)
        pairs.append((found[args.old], found[args.new]))
    print(f"{args.rounds} rounds; each figure shown as @ in its line:")
    print("\n".join(report(pairs)) or "no figure that differs between runs")


if __name__ == "__main__":
    main()
