from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chainkit import checkpoints
from tests.support.postgres import postgres_dsn


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """Opens a new store object on one database (a new connection each call, as another
    process would)."""
    opened: list[Any] = []
    if request.param == "sqlite":
        path = tmp_path / "runs.db"

        def make() -> Any:
            opened.append(checkpoints.SQLiteStore(path))
            return opened[-1]
    else:
        dsn = postgres_dsn()

        def make() -> Any:
            opened.append(checkpoints.PostgresStore(dsn))
            return opened[-1]

    yield make
    for store in opened:
        store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """Which store a child process opens (tests/support/durable_runs.py: open_store)."""
    if request.param == "sqlite":
        return ("sqlite", str(tmp_path / "runs.db"))
    return ("postgres", postgres_dsn())


@pytest.fixture
def run_id() -> str:
    """A run id no earlier test run used (the PostgreSQL database outlives a test run)."""
    return f"test-{uuid.uuid4().hex}"
