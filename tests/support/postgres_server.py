"""A PostgreSQL server of a test's own, to stop, restart and kill (the shared one of
tests/support/postgres.py must stay up): initdb in a temporary folder, on a free port, trusting
local logins (its DSN carries a password all the same, for the tests that it never shows)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.postgres import postgres_dsn

PASSWORD = "pw-never-shown-0451"


def _binaries() -> Path:
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: p.parts)
    if not versions:
        if os.environ.get("CI"):
            pytest.fail("CI must have PostgreSQL's server programs (.ci/run installs them)")
        pytest.skip("no PostgreSQL server programs in /usr/lib/postgresql")
    return versions[-1].parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateServer:
    def __init__(self, folder: Path) -> None:
        self.bin = _binaries()
        self.data = folder / "data"
        self.port = _free_port()
        self.dsn = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{self.port}/postgres"
        self._pg("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8")

    def _pg(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def _ctl(self, *args: str) -> None:
        options = f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._pg("pg_ctl", "-D", str(self.data), "-o", options, "-w", "-t", "60", *args)

    def start(self) -> None:
        self._ctl("start", "-l", str(self.data / "log"))

    def stop(self) -> None:
        """A fast shutdown: the server ends every session, as on a restart or a failover."""
        self._ctl("stop", "-m", "fast")

    def restart(self) -> None:
        self._ctl("restart", "-m", "fast", "-l", str(self.data / "log"))


@contextlib.contextmanager
def private_server() -> Iterator[PrivateServer]:
    postgres_dsn()  # skips (or fails in CI) as every PostgreSQL test does without one
    folder = Path(tempfile.mkdtemp(prefix="chainkit-pg-"))
    folder.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    try:
        server = PrivateServer(folder)
        server.start()
        try:
            yield server
        finally:
            with contextlib.suppress(subprocess.CalledProcessError):
                server._ctl("stop", "-m", "immediate")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
