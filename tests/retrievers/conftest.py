"""The retriever tests' index: the corpus, its vectors from the loopback server's embeddings
endpoint over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chainkit.indexes import InMemoryIndex
from chainkit.llms import OpenAIEmbeddings
from tests.retrievers.support import CORPUS
from tests.support.openai_server import TEST_API_KEY, OpenAIServer


@pytest.fixture
def embedded_index(openai_server: OpenAIServer) -> Iterator[InMemoryIndex]:
    """CORPUS in an index embedding through the loopback server over real HTTP."""
    embedder = OpenAIEmbeddings(base_url=openai_server.base_url, api_key=TEST_API_KEY)
    index = InMemoryIndex(embedder)
    index.upsert(CORPUS)
    yield index
