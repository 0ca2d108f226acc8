"""The test PostgreSQL database with pgvector: `.ci/run` installs the extension (.ci/pgvector,
built from Debian's source package) and creates it in the database CHAINKIT_TEST_POSTGRES_DSN
names. Without it the tests skip, unless CI is set: there a missing extension fails them."""

from __future__ import annotations

import os

import pytest

from chainkit._store import open_database
from tests.support.postgres import postgres_dsn

HOW_TO_INSTALL = (
    "as root, `bash .ci/pgvector`, then, as a superuser, `CREATE EXTENSION vector` "
    "in the test database (as .ci/run does)"
)


def pgvector_dsn() -> str:
    """The DSN of the test database, once it is known to have the vector extension."""
    dsn = postgres_dsn()
    database = open_database(dsn)
    try:
        version = database.run(
            "read the vector extension's version",
            lambda cursor: cursor.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone(),
            write=False,
        )
    finally:
        database.close()
    if version is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have pgvector in the test database: {HOW_TO_INSTALL}")
        pytest.skip(f"no pgvector in the test database: {HOW_TO_INSTALL}")
    return dsn
