"""The retriever tests' index: the corpus, its vectors from the loopback server's embeddings
endpoint over real HTTP, in each kind of index: in memory, and (once `indexes.SQLIndex` is
there) in a SQLite file and on the PostgreSQL server the tests are given."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chainkit import indexes
from chainkit.llms import OpenAIEmbeddings
from tests.retrievers.support import CORPUS
from tests.support.openai_server import TEST_API_KEY, OpenAIServer
from tests.support.postgres import postgres_dsn


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def embedded_index(
    request: pytest.FixtureRequest, openai_server: OpenAIServer, tmp_path: Path
) -> Iterator[Any]:
    """CORPUS in an index embedding through the loopback server over real HTTP."""
    embedder = OpenAIEmbeddings(base_url=openai_server.base_url, api_key=TEST_API_KEY)
    if request.param == "memory":
        index: Any = indexes.InMemoryIndex(embedder)
    else:
        sql_index = getattr(indexes, "SQLIndex", None)
        if sql_index is None:
            pytest.skip("no indexes.SQLIndex in this checkout")
        where = str(tmp_path / "index.db") if request.param == "sqlite" else postgres_dsn()
        index = sql_index(where, embedder, table=f"t_{uuid.uuid4().hex[:12]}")
    index.upsert(CORPUS)
    yield index
    close = getattr(index, "close", None)
    if callable(close):
        close()
