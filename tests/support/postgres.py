"""The PostgreSQL server the checkpoint tests run against: `.ci/run` starts one and exports
its DSN in CHAINKIT_TEST_POSTGRES_DSN. Without it the tests skip, unless CI is set: there a
missing server fails them."""

from __future__ import annotations

import os

import pytest

DSN_VARIABLE = "CHAINKIT_TEST_POSTGRES_DSN"


def postgres_dsn() -> str:
    dsn = os.environ.get(DSN_VARIABLE)
    if not dsn:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have PostgreSQL: .ci/run starts one and sets {DSN_VARIABLE}")
        pytest.skip(f"no PostgreSQL server: set {DSN_VARIABLE} (as .ci/run does)")
    require_psycopg()
    return dsn


def require_psycopg() -> None:
    """Skips the test without psycopg (the postgres extra), unless CI is set: there a missing
    psycopg fails it."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail('CI must have psycopg: pip install -e ".[postgres]"')
        pytest.skip('no psycopg: pip install -e ".[postgres]"')
