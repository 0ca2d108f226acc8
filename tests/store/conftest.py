from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainkit._store import Database, open_database
from tests.support.postgres import postgres_dsn


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database as a user names it: a SQLite file's path, or the test server's DSN."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    return postgres_dsn()


@pytest.fixture
def database(where: str) -> Iterator[Database]:
    opened = open_database(where)
    yield opened
    opened.close()


@pytest.fixture
def table() -> str:
    """A table name no earlier test run used (the PostgreSQL database outlives a run)."""
    return f"t_{uuid.uuid4().hex[:12]}"
