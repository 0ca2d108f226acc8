"""Benchmark data from public repositories is read from ../shared/benchmarks/, beside the
checkout, and the project holds none of it."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.shared_data import SHARED_BENCHMARKS, BenchmarkDataMissing, shared_benchmark

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_file_is_named_in_the_error(tmp_path):
    with pytest.raises(BenchmarkDataMissing) as missing:
        shared_benchmark("bfcl_pooled/bfcl_tools.jsonl.gz", root=tmp_path)
    assert str(tmp_path / "bfcl_pooled" / "bfcl_tools.jsonl.gz") in str(missing.value)
    assert "../shared/benchmarks/" in str(missing.value)


def test_a_folder_is_not_the_data(tmp_path):
    (tmp_path / "bfcl_pooled" / "bfcl_tools.jsonl.gz").mkdir(parents=True)
    with pytest.raises(BenchmarkDataMissing):
        shared_benchmark("bfcl_pooled/bfcl_tools.jsonl.gz", root=tmp_path)


def test_a_present_file_is_found(tmp_path):
    data = tmp_path / "set" / "corpus.jsonl.gz"
    data.parent.mkdir()
    data.write_bytes(gzip.compress(b"{}\n"))
    assert shared_benchmark("set/corpus.jsonl.gz", root=tmp_path) == data


def test_the_shared_folder_is_beside_the_checkout():
    assert ROOT.parent / "shared" / "benchmarks" == SHARED_BENCHMARKS


def _run_bfcl(script: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *arguments],
        capture_output=True,
        text=True,
        timeout=100,
        env={**os.environ, "PYTHONPATH": ""},
    )


@pytest.mark.timeout(120)
def test_a_checkout_without_shared_beside_it_gets_one_line_naming_the_path(tmp_path):
    bench = tmp_path / "checkout" / "bench"
    bench.mkdir(parents=True)
    for name in ("__init__.py", "shared_data.py", "tool_retrieval_bfcl.py"):
        shutil.copy(ROOT / "bench" / name, bench / name)
    done = _run_bfcl(bench / "tool_retrieval_bfcl.py")
    expected = tmp_path / "shared" / "benchmarks" / "bfcl_pooled" / "bfcl_tools.jsonl.gz"
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        f"tool_retrieval_bfcl.py: benchmark data not found: {expected} (data from public"
        " repositories is kept in ../shared/benchmarks/ beside the checkout, not in it: see its"
        " README.md)"
    ]


@pytest.mark.timeout(120)
def test_a_data_file_given_that_is_missing_is_named(tmp_path):
    done = _run_bfcl(ROOT / "bench" / "tool_retrieval_bfcl.py", "--data", str(tmp_path / "x.gz"))
    assert done.returncode != 0
    assert str(tmp_path / "x.gz") in done.stderr
    assert "Traceback" not in done.stderr


def _tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    )
    return [ROOT / name for name in listed.stdout.decode().split("\0") if name]


def _digests(files: list[Path]) -> dict[str, Path]:
    return {hashlib.sha256(path.read_bytes()).hexdigest(): path for path in files}


def test_the_project_holds_no_file_of_the_shared_benchmarks():
    if not SHARED_BENCHMARKS.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"CI has ../shared beside the checkout: {SHARED_BENCHMARKS} is missing")
        pytest.skip(f"no {SHARED_BENCHMARKS}")
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    shared = [path for path in SHARED_BENCHMARKS.rglob("*") if path.is_file()]
    project = [path for path in _tracked_files() if path.is_file()]
    held = _digests(shared).keys() & _digests(project).keys()
    assert not held, [str(_digests(project)[digest]) for digest in held]
    assert not [path for path in project if path.suffix == ".gz"]
