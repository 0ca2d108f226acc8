"""Benchmark data taken from public repositories: it is kept beside the project, in
`../shared/benchmarks/` (each folder's SOURCE.md names the repository, the commit and the
licence), and the project holds none of it."""

from __future__ import annotations

from pathlib import Path

SHARED_BENCHMARKS = Path(__file__).resolve().parent.parent.parent / "shared" / "benchmarks"
"""`../shared/benchmarks/` from the repository root."""


class BenchmarkDataMissing(FileNotFoundError):
    """A benchmark's data file is not where the benchmark reads it."""


def shared_benchmark(relative: str, root: Path = SHARED_BENCHMARKS) -> Path:
    """The path of `relative` under `root`, which must be a file; else BenchmarkDataMissing
    naming the path looked at."""
    path = root / relative
    if not path.is_file():
        raise BenchmarkDataMissing(
            f"benchmark data not found: {path} (data from public repositories is kept in"
            f" ../shared/benchmarks/ beside the checkout, not in it: see its README.md)"
        )
    return path
