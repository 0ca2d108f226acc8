"""Every test here needs the serve extra: skipped without it (before an app is made, which
imports Starlette)."""

from __future__ import annotations

import pytest

from tests.support.extras import need_extra


@pytest.fixture(autouse=True)
def _serve_extra() -> None:
    need_extra("starlette", "serve")
    need_extra("uvicorn", "serve")
