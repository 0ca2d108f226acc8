"""Fixtures of the model tests: a second loopback server, and a model it serves, for
`llms.Fallbacks` to fall back to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chainkit.llms import OpenAI
from tests.conftest import FAST_BACKOFF
from tests.support.openai_server import TEST_API_KEY, OpenAIServer


@pytest.fixture
def backup_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def backup(backup_server: OpenAIServer) -> Iterator[OpenAI]:
    llm = OpenAI(
        "backup-model",
        base_url=backup_server.base_url,
        api_key=TEST_API_KEY,
        timeout=5,
        backoff=FAST_BACKOFF,
    )
    yield llm
    llm.close()
