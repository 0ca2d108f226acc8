"""Every benchmark command the docs give (README.md and docs/) runs as written: `python
bench/NAME.py` from the repository root, with chainkit installed and the checkout itself not
on sys.path (as after a plain `pip install`), gets as far as its `--help` (the script and all
it imports load)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMMAND = re.compile(r"`python (bench/\w+\.py)\b")

# Runs the script as `python SCRIPT --help` would, once every checkout (a directory holding
# `bench/`) is off sys.path: chainkit stays importable, as an installed package is.
AS_INSTALLED = textwrap.dedent(
    """
    import os, runpy, sys
    import chainkit
    script = sys.argv[1]
    kept = [p for p in sys.path[1:] if not os.path.isfile(os.path.join(p, "bench", "__init__.py"))]
    sys.path[:] = [os.path.dirname(os.path.abspath(script)), *kept]
    sys.argv = [script, "--help"]
    runpy.run_path(script, run_name="__main__")
    """
)

NEEDS = {
    "bench/bench_langchain_baseline.py": "langchain_classic",
    "bench/bench_pipeline_langchain.py": "langchain_core",
    "bench/mutation.py": "mutmut",
}
"""Scripts that need a package the docs say to install first, or that `.[dev]` brings (mutmut):
without it, as where only `.[test]` is installed, they skip."""
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def readme_scripts() -> list[str]:
    return sorted(
        {script for page in PAGES for script in COMMAND.findall(page.read_text(encoding="utf-8"))}
    )


def test_the_readme_gives_the_benchmarks():
    assert {"bench/bench_otel.py", "bench/bench_stream.py", "bench/compare.py"} <= set(
        readme_scripts()
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize("script", readme_scripts())
def test_a_readme_benchmark_command_runs_as_written(script):
    needed = NEEDS.get(script)
    if needed is not None and importlib.util.find_spec(needed) is None:
        pytest.skip(f"{script} needs {needed}, which the docs say to install first")
    done = subprocess.run(
        [sys.executable, "-c", AS_INSTALLED, script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage: "), done.stdout[:500]
