"""InMemoryIndex alone: MMR against a direct computation, a search by text through a real
embeddings endpoint over HTTP (and the embeddings cache), concurrent writers, the async twins.
What every index does (upserts, deletes, filters, BM25, source records, wrong input named) is
tested over the in-memory, SQLite and PostgreSQL indexes alike in test_sql_index.py."""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Sequence

import pytest

from chainkit.documents import Document
from chainkit.indexes import Hit, InMemoryIndex
from chainkit.indexes.errors import IndexConfigError
from chainkit.llms import CachedEmbeddings, OpenAIEmbeddings
from tests.support.openai_server import TEST_API_KEY, OpenAIServer, embedding_of


def doc(id_: str, **metadata: object) -> Document:
    return Document(f"text of {id_}", metadata, id=id_)


def ids(hits: list[Hit]) -> list[str]:
    return [hit.document.id for hit in hits]


def angle(degrees: float) -> list[float]:
    return [math.cos(math.radians(degrees)), math.sin(math.radians(degrees))]


def test_mmr_equals_a_direct_computation_on_random_vectors():
    rng = random.Random(7)
    vectors = [[rng.gauss(0, 1) for _ in range(8)] for _ in range(60)]
    query = [rng.gauss(0, 1) for _ in range(8)]
    index = InMemoryIndex()
    index.upsert([doc(str(i)) for i in range(60)], vectors)

    def unit(v: Sequence[float]) -> list[float]:
        length = math.sqrt(sum(x * x for x in v))
        return [x / length for x in v]

    def cos(a: Sequence[float], b: Sequence[float]) -> float:
        return sum(x * y for x, y in zip(unit(a), unit(b), strict=True))

    candidates = sorted(range(60), key=lambda i: -cos(query, vectors[i]))[:20]
    picked: list[int] = []
    while len(picked) < 5:
        picked.append(
            max(
                (i for i in candidates if i not in picked),
                key=lambda i: (
                    0.7 * cos(query, vectors[i])
                    - 0.3 * max((cos(vectors[i], vectors[j]) for j in picked), default=0.0)
                ),
            )
        )

    assert ids(index.mmr(query, k=5, fetch_k=20, diversity=0.3)) == [str(i) for i in picked]


def test_search_by_text_embeds_the_query_through_a_real_endpoint(openai_server: OpenAIServer):
    model = OpenAIEmbeddings(base_url=openai_server.base_url, api_key=TEST_API_KEY)
    index = InMemoryIndex(CachedEmbeddings(model))
    texts = ["the cat sat on the mat", "stock markets fell", "a cat on a mat"]
    index.upsert(Document(text, id=str(i)) for i, text in enumerate(texts))

    hits = index.search("the cat on the mat", k=2)
    index.upsert([Document(texts[0], {"edited": True}, id="0")])  # same text: cached

    assert {hit.document.id for hit in hits} == {"0", "2"}
    assert hits[0].score >= hits[1].score
    assert [request.body["input"] for request in openai_server.requests] == [
        texts,
        ["the cat on the mat"],
    ]
    assert index.get(["0"])[0].metadata["edited"] is True
    assert embedding_of(texts[0])  # the server's vectors are what the index compared
    model.close()


def test_concurrent_upserts_and_searches_lose_nothing():
    index = InMemoryIndex()

    def add(start: int) -> None:
        for i in range(start, start + 200):
            index.upsert([doc(str(i))], [angle(i % 90)])
            index.search(angle(0), k=3)

    threads = [threading.Thread(target=add, args=(n * 200,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert len(index) == 800


def test_the_async_twins_embed_through_the_async_client(openai_server: OpenAIServer, arun):
    model = OpenAIEmbeddings(base_url=openai_server.base_url, api_key=TEST_API_KEY)
    index = InMemoryIndex(model)
    texts = ["the cat sat on the mat", "stock markets fell", "a cat on a mat"]

    async def run() -> tuple[list[Hit], list[Hit]]:
        await index.aupsert(Document(text, {"n": i}, id=str(i)) for i, text in enumerate(texts))
        found = await index.asearch("the cat on the mat", k=2)
        spread = await index.ammr("the cat on the mat", k=2, where={"n": [1, 2]})
        return found, spread

    found, spread = arun(model, run())

    assert ids(found) == ids(index.search(embedding_of("the cat on the mat"), k=2))
    assert set(ids(spread)) == {"1", "2"}
    assert [request.body["input"] for request in openai_server.requests] == [
        texts,
        ["the cat on the mat"],
        ["the cat on the mat"],
    ]


def test_the_async_twins_run_a_sync_embedder_in_a_thread(arun):
    class Sync:
        def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
            return [angle(len(text)) for text in texts]

        def embed_query(self, text: str) -> list[float]:
            return angle(len(text))

    class Nothing:
        async def aclose(self) -> None:
            pass

    index = InMemoryIndex(Sync())
    arun(Nothing(), index.aupsert([doc("a"), Document("x" * 80, id="b")]))

    assert ids(arun(Nothing(), index.asearch("y" * 79, k=1))) == ["b"]
    with pytest.raises(IndexConfigError, match="no embedder"):
        arun(Nothing(), InMemoryIndex().asearch("words"))
