from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from chainkit._store import Database, open_database


@pytest.fixture
def database(where: str) -> Iterator[Database]:
    opened = open_database(where)
    yield opened
    opened.close()


@pytest.fixture
def table() -> str:
    """A table name no earlier test run used (the PostgreSQL database outlives a run)."""
    return f"t_{uuid.uuid4().hex[:12]}"
