"""Time and peak memory of resuming a `chainkit batch` job that has nothing left to do.

Run from the repository root: `python bench/bench_batch_resume.py [LINES]` (default 1,000,000).
Writes LINES input records and a finished output for them in a temporary directory, then runs
`chainkit batch` on them in a subprocess, as a user would, and prints its wall time and
CPU time (steadier than the wall time on a busy machine) and maximum resident set size (the
same figure as `/usr/bin/time -v`'s "Maximum resident set size"). `CHAINKIT_ROOT=/other/checkout`
measures another checkout's code.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = os.environ.get("CHAINKIT_ROOT") or str(Path(__file__).resolve().parent.parent)


def write_job(directory: Path, lines: int) -> tuple[Path, Path]:
    source, output = directory / "in.jsonl", directory / "out.jsonl"
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    with source.open("w") as inputs, output.open("w") as results:
        for number in range(lines):
            inputs.write(json.dumps({"id": number, "input": f"what is {number} + 1?"}) + "\n")
            result = {"id": number, "output": str(number + 1), "steps": 1, "usage": usage}
            results.write(json.dumps({**result, "seconds": 0.5}) + "\n")
    return source, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("lines", nargs="?", type=int, default=1_000_000)
    lines = parser.parse_args().lines
    with tempfile.TemporaryDirectory() as directory:
        source, output = write_job(Path(directory), lines)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "chainkit", "batch", str(source), "-o", str(output)]
        started = time.perf_counter()
        done = subprocess.run(
            command, env=env, cwd=ROOT, capture_output=True, text=True, check=False
        )
        seconds = time.perf_counter() - started
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(done.stderr.strip().splitlines()[-1])
        print(
            f"resumed {lines:,} done lines in {seconds:.1f} s "
            f"({usage.ru_utime + usage.ru_stime:.1f} s of CPU), "
            f"max RSS {usage.ru_maxrss / 1024:.0f} MB"
        )


if __name__ == "__main__":
    main()
