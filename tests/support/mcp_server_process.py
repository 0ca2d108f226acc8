"""Servers over HTTP in a process of their own, for the tests: each prints its URL on stderr, at
the end of a line, once it accepts connections (tests/support/mcp_server.py --http,
`chainkit mcp-serve --http 0` and `chainkit serve --port 0`)."""

from __future__ import annotations

import select
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

START_SECONDS = 20


def start_http_server(
    command: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> tuple[subprocess.Popen[str], str]:
    """Starts the server (in `cwd`, by default this process's); returns its process and the
    URL it announced."""
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env, cwd=cwd
    )
    assert process.stderr is not None
    seen = []
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        ready, _, _ = select.select([process.stderr], [], [], 0.1)
        if ready:
            line = process.stderr.readline()
            seen.append(line)
            if "http://" in line:
                return process, line[line.index("http://") :].strip()
    stop(process)
    raise AssertionError(f"the HTTP server did not start: {''.join(seen)}")


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)
    if process.stderr is not None:
        process.stderr.close()


@contextmanager
def http_server(
    command: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Iterator[str]:
    """The URL of a server running for the duration of the block."""
    process, url = start_http_server(command, env, cwd)
    try:
        yield url
    finally:
        stop(process)
