"""Shared fixtures.

OpenAI backend: `openai_server` runs the loopback OpenAI-compatible server of
tests/support/openai_server.py; `make_openai(**overrides)` builds `OpenAI` models pointed at
it, with waits between retries short enough for tests, and `openai_llm` is one such model.
`arun(model, coroutine)` runs async work in a new event loop and closes the model's async
connections before the loop ends, as an async program should.

`mode` runs a test once sync and once async: `mode.run(chain, input)` (and `call`, `predict`,
`batch`) is `chains.run(...)` or `await chains.arun(...)`, and `mode.generate(model, messages)`
is `model.generate(...)` or `await model.agenerate(...)` (tests/support/modes.py).

`where` runs a test once on a SQLite file (in the test's folder) and once on the test
PostgreSQL server (its DSN; tests/support/postgres.py): a database as a user names it to a
store.

`events` is a fresh `EventRecorder` (tests/support/event_recorder.py), the handler that
records every event.

Every test checks that the errors chainkit raises are `chainkit.ChainkitError`s
(`every_error_is_named`, in tests/support/named_errors.py).

Hypothesis: with CI set (as .ci/run sets it) the "ci" profile draws the same examples on every
run (derandomize), so a CI failure reproduces; elsewhere "dev" draws new ones each run. Both
print the `@reproduce_failure` blob of a failure and have no per-example deadline (a loaded
machine is no bug). `--hypothesis-profile NAME` picks either one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import settings

from chainkit.llms.openai.chat import OpenAI
from chainkit.llms.retry import Backoff
from tests.support.event_recorder import EventRecorder
from tests.support.modes import MODES, AsyncClosable, Mode, run_then_close
from tests.support.named_errors import every_error_is_named  # noqa: F401 - an autouse fixture
from tests.support.openai_server import TEST_API_KEY, OpenAIServer, server_threads
from tests.support.postgres import postgres_dsn

T = TypeVar("T")

settings.register_profile("dev", print_blob=True, deadline=None)
settings.register_profile("ci", parent=settings.get_profile("dev"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

FAST_BACKOFF = Backoff(initial=0.001, maximum=0.005, retry_after_cap=0.01)
"""Retry waits of a few milliseconds; Retry-After is capped at 10 ms."""


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server
    assert not server_threads(), "the loopback server left threads running"


@pytest.fixture
def make_openai(openai_server: OpenAIServer) -> Iterator[Callable[..., OpenAI]]:
    made: list[OpenAI] = []

    def make(**overrides: Any) -> OpenAI:
        settings: dict[str, Any] = {
            "model": "loopback-model",
            "base_url": openai_server.base_url,
            "api_key": TEST_API_KEY,
            "timeout": 5,
            "backoff": FAST_BACKOFF,
            **overrides,
        }
        made.append(OpenAI(**settings))
        return made[-1]

    yield make
    for llm in made:
        llm.close()


@pytest.fixture
def openai_llm(make_openai: Callable[..., OpenAI]) -> OpenAI:
    return make_openai()


@pytest.fixture
def arun() -> Callable[[AsyncClosable, Coroutine[Any, Any, T]], T]:
    return run_then_close


@pytest.fixture
def events() -> EventRecorder:
    return EventRecorder()


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> Mode:
    return Mode(request.param)


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    return postgres_dsn()
