"""InMemoryIndex: documents upserted by id, deleted, searched by vector and by text (through a
real embeddings endpoint over HTTP, and through the embeddings cache) within metadata filters,
and spread out by maximal marginal relevance; wrong input named."""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Sequence

import pytest

from chainkit.documents import Document
from chainkit.indexes import Hit, InMemoryIndex, SourceRecords, VectorIndex
from chainkit.indexes.errors import IndexConfigError, IndexTypeError
from chainkit.llms import CachedEmbeddings, OpenAIEmbeddings
from tests.support.openai_server import TEST_API_KEY, OpenAIServer, embedding_of


def doc(id_: str, **metadata: object) -> Document:
    return Document(f"text of {id_}", metadata, id=id_)


def ids(hits: list[Hit]) -> list[str]:
    return [hit.document.id for hit in hits]


def angle(degrees: float) -> list[float]:
    return [math.cos(math.radians(degrees)), math.sin(math.radians(degrees))]


def test_the_nearest_come_first_with_their_cosine():
    index = InMemoryIndex()
    index.upsert([doc("far"), doc("near"), doc("middle")], [angle(90), angle(10), [3.0, 3.0]])

    hits = index.search(angle(0), k=2)

    assert ids(hits) == ["near", "middle"]
    assert hits[0].score == pytest.approx(math.cos(math.radians(10)))
    assert hits[1].score == pytest.approx(math.cos(math.radians(45)))
    assert isinstance(index, VectorIndex)


def test_upsert_replaces_by_id_and_delete_counts_what_it_removed():
    index = InMemoryIndex()
    index.upsert([doc("a"), doc("b")], [angle(0), angle(90)])
    index.upsert([Document("edited", id="a")], [angle(90)])

    assert len(index) == 2
    assert index.get(["a"])[0].text == "edited"
    assert ids(index.search(angle(90), k=2)) == ["a", "b"]  # a tie: the order added
    assert index.delete(["a", "missing", "a"]) == 1
    assert ids(index.search(angle(0), k=5)) == ["b"]


def test_a_filter_keeps_the_documents_whose_metadata_match():
    index = InMemoryIndex()
    documents = [
        doc("en-1", lang="en", year=2020),
        doc("fr-1", lang="fr", year=2021),
        doc("de-1", lang="de", year=2020),
        doc("none"),
    ]
    index.upsert(documents, [angle(0), angle(1), angle(2), angle(3)])

    assert ids(index.search(angle(0), k=9, where={"lang": "fr"})) == ["fr-1"]
    assert ids(index.search(angle(0), k=9, where={"lang": ["de", "fr"]})) == ["fr-1", "de-1"]
    assert ids(index.search(angle(0), k=9, where={"year": 2020, "lang": "de"})) == ["de-1"]
    assert index.search(angle(0), where={"lang": "ja"}) == []
    index.upsert([doc("dict", lang={"en": 1})], [angle(4)])
    assert ids(index.search(angle(0), k=9, where={"lang": {"de", "fr"}})) == ["fr-1", "de-1"]
    assert len(index.search(angle(0), k=9, where={})) == 5


def test_mmr_passes_over_a_near_copy_of_what_it_picked():
    index = InMemoryIndex()
    index.upsert([doc("best"), doc("copy"), doc("other")], [angle(10), angle(12), angle(-30)])

    assert ids(index.search(angle(0), k=2)) == ["best", "copy"]
    assert ids(index.mmr(angle(0), k=2, diversity=0.5)) == ["best", "other"]
    assert ids(index.mmr(angle(0), k=2, diversity=0.0)) == ["best", "copy"]
    assert index.mmr(angle(0), k=2)[1].score == pytest.approx(math.cos(math.radians(30)))


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


def test_wrong_input_is_named():
    index = InMemoryIndex()
    with pytest.raises(IndexConfigError, match="no embedder to search by text"):
        index.search("words")
    with pytest.raises(IndexTypeError, match="not one: give \\[document\\]"):
        index.upsert(doc("a"))  # type: ignore[arg-type]
    with pytest.raises(IndexTypeError, match=r"documents\[1\] must be a documents.Document"):
        index.upsert([doc("a"), "b"], [[1.0], [2.0]])  # type: ignore[list-item]
    with pytest.raises(IndexConfigError, match="2 documents came with 1 vectors"):
        index.upsert([doc("a"), doc("b")], [[1.0, 0.0]])
    index.upsert([doc("a")], [[1.0, 0.0]])
    with pytest.raises(IndexConfigError, match="3 dimensions, where this index's have 2"):
        index.search([1.0, 0.0, 0.0])
    with pytest.raises(IndexConfigError, match="infinity or NaN"):
        index.upsert([doc("b")], [[float("nan"), 1.0]])
    with pytest.raises(IndexTypeError, match="numbers only"):
        index.search(["x", "y"])  # type: ignore[list-item]
    with pytest.raises(IndexTypeError, match="where must be a mapping"):
        index.search([1.0, 0.0], where=["lang"])  # type: ignore[arg-type]
    with pytest.raises(IndexConfigError, match="k must be at least 1"):
        index.search([1.0, 0.0], k=0)
    with pytest.raises(IndexConfigError, match="diversity must be from 0 to 1"):
        index.mmr([1.0, 0.0], diversity=1.5)
    with pytest.raises(IndexTypeError, match="not one str"):
        index.delete("a")
    with pytest.raises(IndexTypeError, match="not one str"):
        index.get("a")
    with pytest.raises(IndexTypeError, match="embed_documents"):
        InMemoryIndex(object())  # type: ignore[arg-type]
    assert len(index) == 1  # a refused upsert kept nothing


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


def test_a_search_by_terms_ranks_by_bm25_within_a_filter_and_needs_no_embedder():
    index = InMemoryIndex()
    index.upsert(
        [
            Document("the cat sat on the mat", {"lang": "en"}, id="cat"),
            Document("cats and dogs, cats and more cats", {"lang": "en"}, id="cats"),
            Document("a dog in the fog", {"lang": "en"}, id="dog"),
            Document("le chat sur le tapis, cat", {"lang": "fr"}, id="chat"),
            Document("北京是中国的首都", {"lang": "zh"}, id="beijing"),
        ]
    )

    hits = index.keyword_search("cats", k=3)
    assert ids(hits) == ["cats", "cat", "chat"]  # stemmed; the most mentions first
    assert hits[0].score > hits[1].score > 0
    assert ids(index.keyword_search("cat", k=3, where={"lang": "fr"})) == ["chat"]
    assert ids(index.keyword_search("中国首都在哪里", k=1)) == ["beijing"]
    assert index.keyword_search("zebra") == []
    assert index.keyword_search("") == []
    with pytest.raises(IndexConfigError, match="5 documents of this index came without vectors"):
        index.search([1.0, 0.0])


def test_a_filter_few_documents_match_still_finds_k_of_them():
    index = InMemoryIndex()
    index.upsert(
        Document("apple " * (1 + i % 7), {"rare": i % 97 == 0}, id=str(i)) for i in range(2000)
    )

    found = index.keyword_search("apple", k=5, where={"rare": True})

    assert len(found) == 5
    assert all(int(hit.document.id) % 97 == 0 for hit in found)


def test_a_search_by_terms_forgets_replaced_and_deleted_text():
    index = InMemoryIndex()
    index.upsert([Document("old words", id="a"), Document("other words", id="b")])
    index.upsert([Document("new text", id="a")])
    index.delete(["b"])

    assert index.keyword_search("old") == []
    assert index.keyword_search("words") == []
    assert ids(index.keyword_search("new")) == ["a"]


def source_doc(source: str, n: int, text: str = "") -> Document:
    return Document(text or f"{source} part {n}", {"source": source}, id=f"{source}@{n}")


def test_replace_source_swaps_a_sources_documents_and_its_record():
    index = InMemoryIndex()
    index.replace_source("a.md", "h1", [source_doc("a.md", 0), source_doc("a.md", 1)])
    index.replace_source("b.md", "h2", [source_doc("b.md", 0)])
    index.replace_source("a.md", "h3", [source_doc("a.md", 0, "edited")])

    assert index.source_hashes() == {"a.md": "h3", "b.md": "h2"}
    assert sorted(document.id for document in index.get(["a.md@0", "a.md@1", "b.md@0"])) == [
        "a.md@0",
        "b.md@0",
    ]
    assert ids(index.keyword_search("edited")) == ["a.md@0"]
    assert index.delete_sources(["a.md", "gone.md"]) == 1
    assert index.source_hashes() == {"b.md": "h2"}
    assert len(index) == 1


def test_a_refused_replace_source_changes_nothing():
    index = InMemoryIndex()
    index.replace_source("a.md", "h1", [source_doc("a.md", 0)], [[1.0, 0.0]])

    with pytest.raises(IndexConfigError, match=r"source 'b\.md', not 'a\.md'"):
        index.replace_source("a.md", "h2", [source_doc("b.md", 0)], [[1.0, 0.0]])
    with pytest.raises(IndexConfigError, match="3 dimensions"):
        index.replace_source("a.md", "h2", [source_doc("a.md", 1)], [[1.0, 0.0, 0.0]])
    with pytest.raises(IndexTypeError, match="not one str"):
        index.delete_sources("a.md")

    assert index.source_hashes() == {"a.md": "h1"}
    assert [document.id for document in index.get(["a.md@0", "a.md@1"])] == ["a.md@0"]


def test_the_in_memory_index_keeps_source_records():
    assert isinstance(InMemoryIndex(), SourceRecords)


def test_the_async_search_by_terms(arun):
    class Nothing:
        async def aclose(self) -> None:
            pass

    index = InMemoryIndex()
    index.upsert([Document("alpha beta", id="a"), Document("gamma", id="g")])

    assert ids(arun(Nothing(), index.akeyword_search("gamma"))) == ["g"]
    with pytest.raises(IndexTypeError, match="takes a str"):
        arun(Nothing(), index.akeyword_search(["gamma"]))  # type: ignore[arg-type]
