"""CachedEmbeddings in front of a real embeddings endpoint (the loopback server over HTTP), with
its vectors in memory, in a real SQLite file and in the real PostgreSQL: a text embedded once
is not sent again, in this object or a later one, and what an embedder gives wrongly is named,
never cached."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from chainkit._store import open_database
from chainkit.llms import (
    CachedEmbeddings,
    InMemoryEmbeddingCache,
    OpenAIEmbeddings,
    SQLCache,
    SQLEmbeddingCache,
)
from chainkit.llms.embedding_cache import EmbeddingCache, vector_key
from chainkit.llms.errors import ModelConfigError, ModelReplyShapeError, ModelTypeError
from tests.support.openai_server import TEST_API_KEY, OpenAIServer, embedding_of
from tests.support.postgres import postgres_dsn


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def cache(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EmbeddingCache]:
    if request.param == "memory":
        yield InMemoryEmbeddingCache()
        return
    where = str(tmp_path / "vectors.db") if request.param == "sqlite" else postgres_dsn()
    sql = SQLEmbeddingCache(where)
    sql.clear()
    yield sql
    sql.clear()
    sql.close()


def embeddings(server: OpenAIServer, **overrides: object) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(base_url=server.base_url, api_key=TEST_API_KEY, **overrides)  # type: ignore[arg-type]


def sent(server: OpenAIServer) -> list[list[str]]:
    return [request.body["input"] for request in server.requests]


class Counting:
    """A local embedder: each text's vector is (its length, a marker of the kind), and every
    text it is given is recorded."""

    model = "counting"

    def __init__(self, fail_on_call: int | None = None) -> None:
        self.given: list[list[str]] = []
        self.fail_on_call = fail_on_call

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.given.append(list(texts))
        if len(self.given) == self.fail_on_call:
            raise ConnectionError("the embedder went away")
        return [[float(len(text)), 1.0] for text in texts]

    def embed_query(self, text: str) -> list[float]:
        self.given.append([text])
        return [float(len(text)), -1.0]


def test_unchanged_texts_are_not_embedded_again(openai_server: OpenAIServer, cache):
    model = embeddings(openai_server)
    cached = CachedEmbeddings(model, cache)
    first = ["alpha", "beta", "gamma ☃"]

    assert cached.embed_documents(first) == [embedding_of(text) for text in first]
    again = cached.embed_documents(["beta", "delta", "alpha"])

    assert again == [embedding_of(text) for text in ["beta", "delta", "alpha"]]
    assert cached.embed_documents([]) == []
    assert sent(openai_server) == [first, ["delta"]]
    model.close()


def test_a_later_object_on_the_same_database_embeds_nothing_again(
    openai_server: OpenAIServer, tmp_path: Path
):
    path = tmp_path / "vectors.db"
    texts = [f"chunk {i}" for i in range(5)]
    model = embeddings(openai_server)
    CachedEmbeddings(model, SQLEmbeddingCache(path)).embed_documents(texts)

    later = CachedEmbeddings(model, SQLEmbeddingCache(path))

    assert later.embed_documents(texts) == [embedding_of(text) for text in texts]
    assert len(openai_server.requests) == 1
    model.close()


def test_missing_texts_go_in_batches_and_a_repeated_text_once(openai_server: OpenAIServer):
    model = embeddings(openai_server)
    cached = CachedEmbeddings(model, batch_size=2)

    vectors = cached.embed_documents(["a", "b", "a", "c", "d", "e", "b"])

    assert vectors == [embedding_of(text) for text in ["a", "b", "a", "c", "d", "e", "b"]]
    assert sent(openai_server) == [["a", "b"], ["c", "d"], ["e"]]
    model.close()


def test_each_batch_is_kept_as_it_comes_so_a_rerun_after_a_failure_embeds_only_the_rest(cache):
    failing = Counting(fail_on_call=2)
    texts = ["one", "two", "three", "four", "five"]
    with pytest.raises(ConnectionError):
        CachedEmbeddings(failing, cache, batch_size=2).embed_documents(texts)

    working = Counting()
    vectors = CachedEmbeddings(working, cache, batch_size=2).embed_documents(texts)

    assert vectors == [[float(len(text)), 1.0] for text in texts]
    assert working.given == [["three", "four"], ["five"]]


def test_queries_are_cached_apart_from_documents(cache):
    embedder = Counting()
    cached = CachedEmbeddings(embedder, cache)

    assert cached.embed_documents(["same text"]) == [[9.0, 1.0]]
    assert cached.embed_query("same text") == [9.0, -1.0]
    assert cached.embed_query("same text") == [9.0, -1.0]
    assert embedder.given == [["same text"], ["same text"]]


def test_another_model_or_namespace_does_not_share_vectors(openai_server: OpenAIServer, cache):
    small, large = (
        embeddings(openai_server, model="small"),
        embeddings(openai_server, model="large"),
    )
    CachedEmbeddings(small, cache).embed_documents(["text"])
    CachedEmbeddings(large, cache).embed_documents(["text"])
    CachedEmbeddings(small, cache, namespace="small on server 2").embed_documents(["text"])
    CachedEmbeddings(small, cache).embed_documents(["text"])

    assert [request.body["model"] for request in openai_server.requests] == [
        "small",
        "large",
        "small",
    ]
    small.close()
    large.close()


def test_async_calls_use_the_cache_and_the_embedders_async_methods(
    openai_server: OpenAIServer, arun, cache
):
    model = embeddings(openai_server, batch_size=10)
    cached = CachedEmbeddings(model, cache, batch_size=2)

    async def run() -> tuple[list[list[float]], list[list[float]], list[float], list[float]]:
        first = await cached.aembed_documents(["a", "b", "c"])
        second = await cached.aembed_documents(["c", "a"])
        return first, second, await cached.aembed_query("q"), await cached.aembed_query("q")

    first, second, query, query_again = arun(model, run())

    assert first == [embedding_of(text) for text in ["a", "b", "c"]]
    assert second == [embedding_of("c"), embedding_of("a")]
    assert query == query_again == embedding_of("q")
    assert sent(openai_server) == [["a", "b"], ["c"], ["q"]]


def test_an_embedder_without_async_methods_runs_in_a_thread(arun, cache):
    embedder = Counting()
    cached = CachedEmbeddings(embedder, cache)

    class Nothing:
        async def aclose(self) -> None:
            pass

    assert arun(Nothing(), cached.aembed_documents(["xy"])) == [[2.0, 1.0]]
    assert arun(Nothing(), cached.aembed_query("xyz")) == [3.0, -1.0]
    assert embedder.given == [["xy"], ["xyz"]]


def test_vectors_round_trip_exactly_and_changing_one_changes_nothing_cached(cache):
    exact = [0.1, -0.0, 1e-300, -2.5e300, 1 / 3]

    class Exact(Counting):
        def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
            return [list(exact) for _ in texts]

    cached = CachedEmbeddings(Exact(), cache)
    texts = ["lone \udc80 surrogate", "中文文本", ""]
    cached.embed_documents(texts)[0].append(9.0)

    vectors = cached.embed_documents(texts)
    vectors[0][0] = 7.0

    assert cached.embed_documents(texts) == [exact, exact, exact]
    assert [math.copysign(1, v[1]) for v in cached.embed_documents(texts)] == [-1.0] * 3


def test_a_lookup_of_more_keys_than_one_statement_takes(cache):
    embedder = Counting()
    cached = CachedEmbeddings(embedder, cache, batch_size=1000)
    texts = [f"t{i}" for i in range(1_234)]
    cached.embed_documents(texts)

    assert cached.embed_documents(texts) == [[float(len(text)), 1.0] for text in texts]
    assert len(embedder.given) == 2  # batches of 1,000 and 234, then none


def test_the_in_memory_cache_keeps_the_most_recently_used():
    cache = InMemoryEmbeddingCache(max_entries=2)
    cache.put_many([("a", [1.0]), ("b", [2.0])])
    assert cache.get_many(["a"]) == [[1.0]]  # "a" is now the most recently used
    cache.put_many([("c", [3.0])])

    assert cache.get_many(["a", "b", "c"]) == [[1.0], None, [3.0]]
    assert cache.stats().entries == 2


def test_the_key_hashes_namespace_kind_and_text_apart():
    keys = {
        vector_key("m", "document", "text"),
        vector_key("m", "query", "text"),
        vector_key("m|document|", "document", "text"),
        vector_key("m", "document", "text "),
        vector_key("n", "document", "text"),
    }
    assert len(keys) == 5
    assert vector_key("m", "document", "\ud800") != vector_key("m", "document", "\udc00")


@pytest.mark.parametrize(
    ("texts", "match"),
    [
        ("one text", "embed_query"),
        (["fine", 3], r"texts\[1\] must be a str, got int"),
        (None, "texts must be a list of str"),
    ],
)
def test_texts_of_the_wrong_type_are_named(texts, match):
    embedder = Counting()
    with pytest.raises(ModelTypeError, match=match):
        CachedEmbeddings(embedder).embed_documents(texts)
    assert embedder.given == []


def test_settings_of_the_wrong_type_are_named():
    with pytest.raises(ModelTypeError, match="embed_documents"):
        CachedEmbeddings(object())  # type: ignore[arg-type]
    with pytest.raises(ModelTypeError, match="cache must be an embeddings cache"):
        CachedEmbeddings(Counting(), {})  # type: ignore[arg-type]
    with pytest.raises(ModelTypeError, match="namespace must be a str"):
        CachedEmbeddings(Counting(), namespace=1)  # type: ignore[arg-type]
    with pytest.raises(ModelConfigError, match="batch_size must be at least 1"):
        CachedEmbeddings(Counting(), batch_size=0)


@pytest.mark.parametrize(
    ("vectors", "match"),
    [
        ([[1.0]], "gave 1 vector for 2 texts"),
        ([[1.0], [float("nan")]], "not a non-empty list of finite numbers"),
        ([[1.0], []], "not a non-empty list of finite numbers"),
        ([[1.0], ["x"]], "not a non-empty list of finite numbers"),
        ([[1.0], "12"], "where a vector"),
    ],
)
def test_what_an_embedder_gives_wrongly_is_named_and_not_cached(vectors, match, cache):
    class Wrong(Counting):
        def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
            return vectors  # type: ignore[no-any-return]

    with pytest.raises(ModelReplyShapeError, match=match):
        CachedEmbeddings(Wrong(), cache).embed_documents(["a", "b"])
    assert cache.stats().entries == 0


def test_the_repr_names_the_embedder_and_never_a_password():
    cached = CachedEmbeddings(Counting(), SQLEmbeddingCache(postgres_dsn()))
    assert "counting" in repr(cached).lower()
    assert "ck:ck" not in repr(cached) and ":ck@" not in repr(cached)


def test_a_text_given_twice_gets_two_lists_embedded_or_cached(cache):
    cached = CachedEmbeddings(Counting(), cache)
    for _ in range(2):  # embedded, then from the cache
        vectors = cached.embed_documents(["same", "same"])
        vectors[0].append(9.0)
        assert vectors[1] == [4.0, 1.0]


def test_a_database_open_already_is_shared_with_other_stores_and_left_open(tmp_path: Path):
    database = open_database(tmp_path / "app.db")
    vectors, replies = SQLEmbeddingCache(database), SQLCache(database)
    CachedEmbeddings(Counting(), vectors).embed_documents(["kept"])
    vectors.close()

    assert CachedEmbeddings(Counting(), SQLEmbeddingCache(database)).embed_query("q")
    assert SQLEmbeddingCache(database).stats().entries == 2
    assert replies.stats().entries == 0
    database.close()
