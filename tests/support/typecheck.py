"""mypy --strict run on a user's file, as a user's editor or CI would run it on their code."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Generous: mypy type-checks chainkit from scratch (no cache), seconds alone, a minute or more
# on a loaded 2-core machine. The tests that use this carry a pytest timeout above it.
MYPY_SECONDS = 230


def mypy_errors(tmp_path: Path, code: str) -> tuple[list[str], str]:
    """The `error:` lines of mypy --strict on `code`, and its whole output for messages.

    In a process of its own: mypy raises the interpreter's recursion limit for good."""
    user_file = tmp_path / "user_code.py"
    user_file.write_text(code, encoding="utf-8")
    result = subprocess.run(
        [
            *(sys.executable, "-m", "mypy", "--strict", "--no-incremental"),
            *("--cache-dir=/dev/null", "--config-file=", str(user_file)),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=MYPY_SECONDS,
    )
    output = result.stdout + result.stderr
    return [line for line in result.stdout.splitlines() if ": error:" in line], output
