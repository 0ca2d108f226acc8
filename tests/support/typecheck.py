"""mypy --strict run on a user's file, as a user's editor or CI would run it on their code."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Generous: mypy type-checks chainkit from scratch (no cache), seconds alone, a minute or more
# on a loaded 2-core machine. The tests that use this carry a pytest timeout above it.
MYPY_SECONDS = 230


def mypy_errors(
    tmp_path: Path, code: str, *, installed_in: str | None = None
) -> tuple[list[str], str]:
    """The `error:` lines of mypy --strict on `code`, and its whole output for messages.

    By default chainkit is this checkout's, as in the checkout. With `installed_in` (a Python
    interpreter), mypy finds chainkit as a user's would: among that interpreter's installed
    packages, run from `tmp_path` with no PYTHONPATH.

    In a process of its own: mypy raises the interpreter's recursion limit for good."""
    user_file = tmp_path / "user_code.py"
    user_file.write_text(code, encoding="utf-8")
    if installed_in is None:
        cwd, env, python = ROOT, None, []
    else:
        cwd, python = tmp_path, [f"--python-executable={installed_in}"]
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    result = subprocess.run(
        [
            *(sys.executable, "-m", "mypy", "--strict", "--no-incremental"),
            *("--cache-dir=/dev/null", "--config-file=", *python, str(user_file)),
        ],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
        timeout=MYPY_SECONDS,
    )
    output = result.stdout + result.stderr
    return [line for line in result.stdout.splitlines() if ": error:" in line], output
