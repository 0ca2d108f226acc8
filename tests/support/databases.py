"""The `where` fixture: a test run once on a SQLite file (in the test's folder) and once on
the test PostgreSQL server (its DSN; tests/support/postgres.py), a database as a user names it
to a store. Import `where_fixture` into a test module (or a conftest.py) that takes `where`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.postgres import postgres_dsn


@pytest.fixture(params=["sqlite", "postgres"], name="where")
def where_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    return postgres_dsn()
