"""Every test here needs the serve extra: skipped without it (before an app is made, which
imports Starlette).

A served app left in a reference cycle keeps its models' async clients until a garbage
collection; the openai package then closes each on whatever event loop is running, which in a
later test's loop raises "Event loop is closed" as an unretrieved task's error. They are
collected after each test here, where no loop runs and the package lets them go quietly."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tests.support.extras import need_extra


@pytest.fixture(autouse=True)
def _serve_extra() -> Iterator[None]:
    need_extra("starlette", "serve")
    need_extra("uvicorn", "serve")
    yield
    gc.collect()
