"""SQLIndex in a real SQLite file and on the real PostgreSQL with pgvector, beside the
in-memory index where the behaviour is the protocol's: upserts replace by id, deletes count,
filters, MMR, BM25 by terms (Chinese too), source records replaced in one step; and what only
a database gives: the index outlives its object, two objects (processes) see each other's
writes, a crash mid-write leaves the old state."""

from __future__ import annotations

import math
import multiprocessing
import os
import random
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from chainkit._errors import StoreError
from chainkit._store import open_database
from chainkit.documents import Document
from chainkit.indexes import Hit, InMemoryIndex, SourceRecords, SQLIndex, VectorIndex
from chainkit.indexes.errors import IndexConfigError, IndexTypeError
from chainkit.llms import OpenAIEmbeddings
from tests.support.openai_server import TEST_API_KEY, OpenAIServer, embedding_of
from tests.support.pgvector import pgvector_dsn

Index = InMemoryIndex | SQLIndex
Open = Callable[..., Any]
"""Opens the index under test (again, for a persistent one: a second object on the same
tables), given an embedder or none."""


def doc(id_: str, **metadata: object) -> Document:
    return Document(f"text of {id_}", metadata, id=id_)


def source_doc(source: str, n: int, text: str = "") -> Document:
    return Document(text or f"{source} part {n}", {"source": source}, id=f"{source}@{n}")


def ids(hits: list[Hit]) -> list[str]:
    return [hit.document.id for hit in hits]


def angle(degrees: float) -> list[float]:
    return [math.cos(math.radians(degrees)), math.sin(math.radians(degrees))]


class Lengths:
    """An embedder whose vector of a text is the angle of its length in degrees."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.fail_after = fail_after
        self.calls = 0

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            self.calls += 1
            if self.fail_after is not None and self.calls > self.fail_after:
                raise RuntimeError("the embeddings server went away")
            vectors.append(angle(len(text)))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return angle(len(text))


def _where(kind: str, tmp_path: Path) -> str:
    return str(tmp_path / "index.db") if kind == "sqlite" else pgvector_dsn()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def open_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Open]:
    """Every index; for the persistent ones, each call a new object on the same tables."""
    opened: list[Any] = []
    if request.param == "memory":
        yield InMemoryIndex
        return
    where, table = _where(request.param, tmp_path), f"t_{uuid.uuid4().hex[:12]}"

    def open_sql(embedder: Any = None) -> SQLIndex:
        index = SQLIndex(where, embedder, table=table)
        opened.append(index)
        return index

    yield open_sql
    for index in opened:
        index.close()


@pytest.fixture(params=["sqlite", "postgres"])
def open_sql(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Open]:
    """The persistent indexes alone."""
    where, table = _where(request.param, tmp_path), f"t_{uuid.uuid4().hex[:12]}"
    opened: list[SQLIndex] = []

    def open_sql(embedder: Any = None) -> SQLIndex:
        index = SQLIndex(where, embedder, table=table)
        opened.append(index)
        return index

    yield open_sql
    for index in opened:
        index.close()


def test_the_nearest_come_first_with_their_cosine(open_index: Open):
    index = open_index()
    index.upsert([doc("far"), doc("near"), doc("middle")], [angle(90), angle(10), [3.0, 3.0]])

    hits = index.search(angle(0), k=2)

    assert ids(hits) == ["near", "middle"]
    assert hits[0].score == pytest.approx(math.cos(math.radians(10)), abs=1e-6)
    assert hits[1].score == pytest.approx(math.cos(math.radians(45)), abs=1e-6)
    assert isinstance(index, VectorIndex)
    assert isinstance(index, SourceRecords)


def test_upsert_replaces_by_id_and_delete_counts_what_it_removed(open_index: Open):
    index = open_index()
    index.upsert([doc("a"), doc("b")], [angle(0), angle(90)])
    index.upsert([Document("edited", id="a")], [angle(90)])

    assert len(index) == 2
    assert index.get(["a"])[0].text == "edited"
    assert ids(index.search(angle(90), k=2)) == ["a", "b"]  # a tie: the order ids came in
    assert index.delete(["a", "missing", "a"]) == 1
    assert index.delete([]) == 0
    assert ids(index.search(angle(0), k=5)) == ["b"]
    assert ids(index.keyword_search("edited")) == []


def test_a_filter_keeps_the_documents_whose_metadata_match(open_index: Open):
    index = open_index()
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
    assert ids(index.search(angle(0), k=9, where={"year": 2020.0, "lang": "de"})) == ["de-1"]
    assert index.search(angle(0), where={"lang": "ja"}) == []
    index.upsert([doc("dict", lang={"en": 1})], [angle(4)])
    assert ids(index.search(angle(0), k=9, where={"lang": {"de", "fr"}})) == ["fr-1", "de-1"]
    assert ids(index.search(angle(0), k=9, where={"lang": {"en": 1}})) == ["dict"]
    assert len(index.search(angle(0), k=9, where={})) == 5


def test_a_filter_compares_values_as_python_does(open_index: Open):
    """What SQL is asked first is only a narrowing: True equals 1, a list equals a list,
    None is a value, and a key with a quote in it is a key."""
    index = open_index()
    index.upsert(
        [
            doc("one", flag=1, tags=["a", "b"], note=None, **{'say "hi"': "yes"}),
            doc("true", flag=True, tags="a"),
            doc("two", flag=2, tags=["b"]),
            doc("text", flag="1", tags='["a", "b"]'),
        ],
        [angle(0), angle(1), angle(2), angle(3)],
    )

    assert ids(index.search(angle(0), k=9, where={"flag": True})) == ["one", "true"]
    assert ids(index.search(angle(0), k=9, where={"flag": [1, "1"]})) == ["one", "true", "text"]
    assert ids(index.search(angle(0), k=9, where={"tags": ["a", "b"]})) == ["one", "true"]
    assert ids(index.search(angle(0), k=9, where={"tags": "a"})) == ["true"]
    assert ids(index.search(angle(0), k=9, where={"note": None})) == ["one"]
    assert ids(index.search(angle(0), k=9, where={'say "hi"': "yes"})) == ["one"]
    assert ids(index.keyword_search("text", k=9, where={"flag": 2})) == ["two"]


def test_mmr_passes_over_a_near_copy_of_what_it_picked(open_index: Open):
    index = open_index()
    index.upsert([doc("best"), doc("copy"), doc("other")], [angle(10), angle(12), angle(-30)])

    assert ids(index.search(angle(0), k=2)) == ["best", "copy"]
    assert ids(index.mmr(angle(0), k=2, diversity=0.5)) == ["best", "other"]
    assert ids(index.mmr(angle(0), k=2, diversity=0.0)) == ["best", "copy"]
    assert index.mmr(angle(0), k=2)[1].score == pytest.approx(math.cos(math.radians(30)), 1e-6)


def test_a_search_by_terms_ranks_by_bm25_within_a_filter(open_index: Open):
    index = open_index()
    index.upsert(
        [
            Document("the cat sat on the mat", {"lang": "en"}, id="cat"),
            Document("cats and dogs, cats and more cats", {"lang": "en"}, id="cats"),
            Document("a dog in the fog", {"lang": "en"}, id="dog"),
            Document("le chat sur le tapis, cat", {"lang": "fr"}, id="chat"),
            Document("北京是中国的首都", {"lang": "zh"}, id="beijing"),
            Document("上海是中国最大的城市", {"lang": "zh"}, id="shanghai"),
        ]
    )

    hits = index.keyword_search("cats", k=3)
    assert ids(hits) == ["cats", "cat", "chat"]
    assert hits[0].score > hits[1].score > 0
    assert ids(index.keyword_search("cat", k=3, where={"lang": "fr"})) == ["chat"]
    assert ids(index.keyword_search("中国的首都在哪里", k=1)) == ["beijing"]
    assert ids(index.keyword_search("最大的城市", k=1)) == ["shanghai"]
    assert index.keyword_search("zebra") == []
    assert index.keyword_search("") == []
    with pytest.raises(IndexConfigError, match="6 documents of this index came without vectors"):
        index.search([1.0, 0.0])


def test_a_search_by_terms_gives_the_in_memory_indexs_scores(open_sql: Open):
    texts = [f"report {i} on {'rain ' * (i % 4)}and {'wind ' * (i % 3)}" for i in range(40)]
    documents = [Document(text, {"n": i}, id=str(i)) for i, text in enumerate(texts)]
    memory, index = InMemoryIndex(), open_sql()
    memory.upsert(documents)
    index.upsert(documents)

    for query in ("rain", "wind and rain", "report"):
        expected = memory.keyword_search(query, k=10, where={"n": list(range(0, 40, 3))})
        found = index.keyword_search(query, k=10, where={"n": list(range(0, 40, 3))})
        assert [(hit.document, hit.score) for hit in found] == [
            (hit.document, pytest.approx(hit.score)) for hit in expected
        ]


def test_a_filter_few_documents_match_still_finds_k_of_them(open_index: Open):
    index = open_index()
    index.upsert(
        Document("apple " * (1 + i % 7), {"rare": i % 97 == 0}, id=str(i)) for i in range(2000)
    )

    found = index.keyword_search("apple", k=5, where={"rare": True})

    assert len(found) == 5
    assert all(int(hit.document.id) % 97 == 0 for hit in found)


def test_a_search_by_terms_forgets_replaced_and_deleted_text(open_index: Open):
    index = open_index()
    index.upsert([Document("old words", id="a"), Document("other words", id="b")])
    assert ids(index.keyword_search("words", k=3)) == ["a", "b"]  # loaded, then kept current
    index.upsert([Document("new text", id="a")])
    index.delete(["b"])

    assert index.keyword_search("old") == []
    assert index.keyword_search("words") == []
    assert ids(index.keyword_search("new")) == ["a"]


def test_an_empty_index_finds_nothing(open_index: Open):
    index = open_index()

    assert len(index) == 0
    assert index.search([1.0, 0.0]) == []
    assert index.mmr([1.0, 0.0]) == []
    assert index.keyword_search("anything") == []
    assert index.source_hashes() == {}
    assert index.get(["a"]) == []
    assert index.delete_sources(["a.md"]) == 0


def test_replace_source_swaps_a_sources_documents_and_its_record(open_index: Open):
    index = open_index()
    index.replace_source("a.md", "h1", [source_doc("a.md", 0), source_doc("a.md", 1)])
    index.replace_source("b.md", "h2", [source_doc("b.md", 0)])
    index.replace_source("a.md", "h3", [source_doc("a.md", 0, "edited")])

    assert index.source_hashes() == {"a.md": "h3", "b.md": "h2"}
    assert [document.id for document in index.get(["a.md@0", "a.md@1", "b.md@0"])] == [
        "a.md@0",
        "b.md@0",
    ]
    assert ids(index.keyword_search("edited")) == ["a.md@0"]
    assert index.delete_sources(["a.md", "gone.md"]) == 1
    assert index.source_hashes() == {"b.md": "h2"}
    assert len(index) == 1


def test_a_refused_replace_source_changes_nothing(open_index: Open):
    index = open_index()
    index.replace_source("a.md", "h1", [source_doc("a.md", 0)], [[1.0, 0.0]])

    with pytest.raises(IndexConfigError, match=r"source 'b\.md', not 'a\.md'"):
        index.replace_source("a.md", "h2", [source_doc("b.md", 0)], [[1.0, 0.0]])
    with pytest.raises(IndexConfigError, match="3 dimensions"):
        index.replace_source("a.md", "h2", [source_doc("a.md", 1)], [[1.0, 0.0, 0.0]])
    with pytest.raises(IndexTypeError, match="not one str"):
        index.delete_sources("a.md")

    assert index.source_hashes() == {"a.md": "h1"}
    assert [document.id for document in index.get(["a.md@0", "a.md@1"])] == ["a.md@0"]
    assert ids(index.search([1.0, 0.0])) == ["a.md@0"]


def test_replace_source_keeps_the_old_state_when_the_embedder_fails_midway(open_index: Open):
    index = open_index(Lengths(fail_after=3))
    index.replace_source("a.md", "h1", [source_doc("a.md", 0), source_doc("a.md", 1)])

    new = [source_doc("a.md", n, f"new text {n}") for n in range(3)]
    with pytest.raises(RuntimeError, match="went away"):
        index.replace_source("a.md", "h2", new)

    assert index.source_hashes() == {"a.md": "h1"}
    assert len(index) == 2
    assert index.keyword_search("new") == []
    assert ids(index.keyword_search("part", k=5)) == ["a.md@0", "a.md@1"]


def test_a_lexical_only_index_refuses_a_search_by_meaning_by_name(open_index: Open):
    index = open_index()
    index.upsert([Document("words alone", id="w")])

    with pytest.raises(IndexConfigError, match="1 document of this index came without vectors"):
        index.search([1.0, 0.0])
    with pytest.raises(IndexConfigError, match="no embedder to search by text"):
        index.search("words")
    assert ids(index.keyword_search("words")) == ["w"]


def test_wrong_input_is_named(open_index: Open):
    index = open_index()
    with pytest.raises(IndexTypeError, match="not one: give \\[document\\]"):
        index.upsert(doc("a"))
    with pytest.raises(IndexTypeError, match=r"documents\[1\] must be a documents.Document"):
        index.upsert([doc("a"), "b"], [[1.0], [2.0]])
    with pytest.raises(IndexConfigError, match="2 documents came with 1 vectors"):
        index.upsert([doc("a"), doc("b")], [[1.0, 0.0]])
    index.upsert([doc("a")], [[1.0, 0.0]])
    with pytest.raises(IndexConfigError, match="3 dimensions, where this index's have 2"):
        index.search([1.0, 0.0, 0.0])
    with pytest.raises(IndexConfigError, match="3 dimensions, where this index's have 2"):
        index.upsert([doc("c")], [[1.0, 0.0, 0.0]])
    with pytest.raises(IndexConfigError, match="infinity or NaN"):
        index.upsert([doc("b")], [[float("nan"), 1.0]])
    with pytest.raises(IndexConfigError, match="infinity or NaN"):
        index.search([float("inf"), 1.0])
    with pytest.raises(IndexTypeError, match="numbers only"):
        index.search(["x", "y"])
    with pytest.raises(IndexTypeError, match="where must be a mapping"):
        index.search([1.0, 0.0], where=["lang"])
    with pytest.raises(IndexConfigError, match="k must be at least 1"):
        index.search([1.0, 0.0], k=0)
    with pytest.raises(IndexTypeError, match="k must be a whole number"):
        index.keyword_search("a", k="3")
    with pytest.raises(IndexConfigError, match="diversity must be from 0 to 1"):
        index.mmr([1.0, 0.0], diversity=1.5)
    with pytest.raises(IndexTypeError, match="not one str"):
        index.delete("a")
    with pytest.raises(IndexTypeError, match="not one str"):
        index.get("a")
    with pytest.raises(IndexTypeError, match="takes a str"):
        index.keyword_search(["a"])
    with pytest.raises(IndexTypeError, match="embed_documents"):
        open_index(object())
    assert len(index) == 1  # a refused upsert kept nothing


def test_a_persistent_index_refuses_what_it_cannot_store(open_sql: Open, tmp_path: Path):
    index = open_sql()
    with pytest.raises(IndexTypeError, match="metadata must be JSON values"):
        index.upsert([Document("x", {"when": object()}, id="x")])
    with pytest.raises(IndexConfigError, match="vectors of \\[2, 3\\] dimensions in one batch"):
        index.upsert([doc("a"), doc("b")], [[1.0, 0.0], [1.0, 0.0, 0.0]])
    with pytest.raises(IndexConfigError, match="table must be a name"):
        SQLIndex(tmp_path / "other.db", table="x; DROP TABLE y")
    assert len(index) == 0


def test_the_async_twins(open_index: Open, arun):
    class Nothing:
        async def aclose(self) -> None:
            pass

    index = open_index(Lengths())
    arun(Nothing(), index.aupsert([doc("a"), Document("x" * 80, {"n": 1}, id="b")]))

    assert ids(arun(Nothing(), index.asearch("y" * 79, k=1))) == ["b"]
    assert ids(arun(Nothing(), index.ammr("y" * 79, k=1, where={"n": 1}))) == ["b"]
    assert ids(arun(Nothing(), index.akeyword_search("text"))) == ["a"]
    with pytest.raises(IndexTypeError, match="takes a str"):
        arun(Nothing(), index.akeyword_search(["text"]))


def test_a_reopened_index_holds_everything(open_sql: Open):
    index = open_sql()
    index.replace_source("a.md", "h1", [source_doc("a.md", 0, "北京的天气")], [angle(5)])
    index.upsert([Document("plain words", {"n": 1.5, "ok": True}, id="p")], [angle(80)])
    index.close()

    again = open_sql()

    assert len(again) == 2
    assert again.source_hashes() == {"a.md": "h1"}
    assert ids(again.search(angle(0), k=2)) == ["a.md@0", "p"]
    assert ids(again.keyword_search("天气")) == ["a.md@0"]
    assert again.get(["p"]) == [Document("plain words", {"n": 1.5, "ok": True}, id="p")]
    with pytest.raises(IndexConfigError, match="3 dimensions, where this index's have 2"):
        again.upsert([doc("c")], [[1.0, 0.0, 0.0]])


def test_two_objects_on_one_database_see_each_others_writes(open_sql: Open):
    first, second = open_sql(), open_sql()
    first.upsert([Document("alpha words", id="a")], [angle(0)])
    assert ids(first.keyword_search("words")) == ["a"]  # its copies loaded
    assert ids(first.search(angle(0))) == ["a"]

    second.upsert([Document("beta words", id="b")], [angle(1)])
    second.delete(["a"])
    assert ids(first.keyword_search("words")) == ["b"]
    assert ids(first.search(angle(0))) == ["b"]

    first.upsert([Document("gamma words", id="g")], [angle(2)])  # after the other's writes
    second.replace_source("s", "h", [Document("delta words", {"source": "s"}, id="d")], [angle(3)])
    assert sorted(ids(first.keyword_search("words", k=9))) == ["b", "d", "g"]
    assert ids(first.search(angle(0), k=9)) == ["b", "g", "d"]
    assert first.source_hashes() == {"s": "h"}


def test_indexes_under_two_table_names_share_a_database(open_sql: Open, tmp_path: Path):
    database = open_database(tmp_path / "shared.db")
    one, two = SQLIndex(database, table="one"), SQLIndex(database, table="two")
    one.upsert([Document("in one", id="x")])
    two.upsert([Document("in two", id="x")], [[1.0, 0.0]])

    assert one.get(["x"])[0].text == "in one"
    assert two.get(["x"])[0].text == "in two"
    one.close()  # leaves the database, which it did not open, open
    assert ids(two.search([1.0, 0.0])) == ["x"]
    database.close()


def test_a_search_by_text_embeds_through_a_real_endpoint(
    open_sql: Open, openai_server: OpenAIServer
):
    model = OpenAIEmbeddings(base_url=openai_server.base_url, api_key=TEST_API_KEY)
    index = open_sql(model)
    texts = ["the cat sat on the mat", "stock markets fell", "a cat on a mat"]
    index.upsert(Document(text, id=str(i)) for i, text in enumerate(texts))

    hits = index.search("the cat on the mat", k=2)

    assert ids(hits) == ids(index.search(embedding_of("the cat on the mat"), k=2))
    assert {hit.document.id for hit in hits} == {"0", "2"}
    model.close()


def _crash_while_replacing(path: str, table: str) -> None:
    """In a child process: replaces a source, and dies (as kill -9 would leave it) once the
    old rows are deleted and a new one written, before the transaction commits."""
    index = SQLIndex(path, table=table)
    connection = index._db._connection  # type: ignore[attr-defined]
    connection.create_function("die", 0, lambda: os._exit(9))
    connection.execute(f"CREATE TEMP TRIGGER dies AFTER INSERT ON {table} BEGIN SELECT die(); END")
    index.replace_source("a.md", "h2", [source_doc("a.md", n, f"new {n}") for n in range(3)])


def test_a_crash_mid_replace_source_leaves_the_old_state(tmp_path: Path):
    path, table = str(tmp_path / "index.db"), "crashed"
    index = SQLIndex(path, table=table)
    index.replace_source("a.md", "h1", [source_doc("a.md", 0), source_doc("a.md", 1)])
    index.close()

    child = multiprocessing.get_context("spawn").Process(
        target=_crash_while_replacing, args=(path, table)
    )
    child.start()
    child.join(timeout=60)

    assert child.exitcode == 9
    again = SQLIndex(path, table=table)
    assert again.source_hashes() == {"a.md": "h1"}
    assert ids(again.keyword_search("part", k=5)) == ["a.md@0", "a.md@1"]
    assert again.keyword_search("new") == []
    again.close()


def test_tables_of_a_newer_chainkit_are_refused(tmp_path: Path):
    path = tmp_path / "index.db"
    SQLIndex(path, table="docs").close()
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE chainkit_schema SET version = 99 WHERE name = 'index:docs'")
    connection.close()

    with pytest.raises(StoreError, match="schema version 99"):
        SQLIndex(path, table="docs")


def test_postgres_keeps_vectors_in_pgvector_with_an_hnsw_index():
    dsn = pgvector_dsn()
    table = f"t_{uuid.uuid4().hex[:12]}"
    index = SQLIndex(dsn, table=table)
    index.upsert([doc("a")], [[1.0, 0.0, 0.0]])
    database = open_database(dsn)

    def inspect(cursor: Any) -> tuple[Any, Any]:
        column = cursor.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = CAST(? AS regclass) AND attname = 'vector'",
            (table,),
        ).fetchone()
        made = cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = ? AND indexname = ?",
            (table, f"{table}_by_vector"),
        ).fetchone()
        return column, made

    column, made = database.run("inspect", inspect)

    assert column == ("vector(3)",)
    assert "hnsw" in made[0] and "vector_cosine_ops" in made[0]
    assert "password" not in repr(index) and "ck:ck" not in repr(index)
    database.close()
    index.close()


def test_threads_writing_and_searching_one_index_lose_nothing(open_sql: Open):
    index, other = open_sql(), open_sql()
    failures: list[BaseException] = []

    def work(start: int) -> None:
        try:
            for i in range(start, start + 40):
                writer = index if i % 2 else other
                writer.upsert([Document(f"note {i} words", id=str(i))], [angle(i % 90)])
                index.keyword_search("words", k=3)
                index.search(angle(0), k=3)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=work, args=(n * 40,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=100)

    assert failures == []
    assert len(index) == 160
    assert len(index.keyword_search("words", k=500)) == 160
    assert len(index.search(angle(0), k=500)) == 160


def test_hostile_values_are_refused_by_name_and_change_nothing(open_sql: Open):
    index = open_sql()
    index.upsert([doc("kept", n=1)], [angle(0)])

    with pytest.raises(StoreError, match="not valid Unicode"):
        index.upsert([Document("half a pair \ud800", id="bad")], [angle(1)])
    assert ids(index.search(angle(0), k=10**9, where={"n": list(range(100_000))})) == ["kept"]
    assert ids(index.keyword_search("text", k=10**9, where={"n": [1] * 5_000})) == ["kept"]
    assert len(index) == 1


def test_a_filtered_search_finds_as_many_as_match_and_the_nearest_of_them(open_sql: Open):
    rng = random.Random(11)
    vectors = [[rng.gauss(0, 1) for _ in range(8)] for _ in range(600)]
    documents = [doc(str(i), group=i % 50) for i in range(600)]
    index, memory = open_sql(), InMemoryIndex()
    for store in (index, memory):
        store.upsert(documents, vectors)

    for group in (0, 7, 49):
        found = index.search(vectors[group + 1], k=10, where={"group": group})
        expected = memory.search(vectors[group + 1], k=10, where={"group": group})
        assert ids(found) == ids(expected)
        assert [hit.score for hit in found] == pytest.approx([h.score for h in expected], 1e-5)


def test_a_table_of_another_store_is_never_taken_for_an_index(tmp_path: Path):
    path = tmp_path / "shared.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE notes (id TEXT PRIMARY KEY, body TEXT)")
    connection.close()

    with pytest.raises(IndexConfigError, match=r"table 'notes' .* is not an index's"):
        SQLIndex(path, table="notes")
    with pytest.raises(IndexConfigError, match="holds the database's schema versions"):
        SQLIndex(path, table="chainkit_schema")


def test_postgres_filtered_search_through_the_hnsw_index_finds_k():
    """With the planner made to take the HNSW index (no sequential scans), a filter that 1 row
    in 50 meets still yields k rows, where a plain HNSW scan hands back its ef_search (40)
    nearest, about one of which matches: pgvector scans the graph on (0.8's iterative scan),
    and the index asks again for more while too few match."""
    dsn = pgvector_dsn()
    options = "options=-c%20enable_seqscan%3Doff"
    forced = f"{dsn}{'&' if '?' in dsn else '?'}{options}"
    rng = random.Random(5)
    vectors = [[rng.gauss(0, 1) for _ in range(8)] for _ in range(1000)]
    index = SQLIndex(forced, table=f"t_{uuid.uuid4().hex[:12]}")
    index.upsert([doc(str(i), group=i % 50) for i in range(1000)], vectors)

    found = index.search(vectors[0], k=10, where={"group": 7})

    assert len(found) == 10
    assert all(hit.document.metadata["group"] == 7 for hit in found)
    assert [hit.score for hit in found] == sorted((hit.score for hit in found), reverse=True)
    index.close()
