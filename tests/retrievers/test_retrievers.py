"""Lexical, Dense, MMR and Hybrid over an index whose vectors come over real HTTP: what each
finds, best first, within `k`, a metadata filter and a score threshold; sync and async alike;
every hostile query and setting named."""

from __future__ import annotations

import asyncio
import threading

import pytest

from chainkit import retrievers
from chainkit.documents import Document
from chainkit.indexes import Hit, InMemoryIndex
from chainkit.llms import OpenAIEmbeddings
from chainkit.retrievers import MAX_QUERY_CHARS, QueryError, Retriever
from chainkit.retrievers.errors import RetrieverConfigError, RetrieverTypeError
from chainkit.retrievers.hybrid import RANK_CONSTANT
from tests.retrievers.support import CORPUS, ids, search
from tests.support.modes import Mode
from tests.support.openai_server import TEST_API_KEY, OpenAIServer


def test_lexical_finds_by_terms_best_first_and_never_a_document_sharing_none(
    embedded_index: InMemoryIndex, mode: Mode
) -> None:
    hits = search(retrievers.Lexical(embedded_index, k=4), "tortoise winter", mode)
    assert ids(hits) == ["t", "l"]  # "winter" is t's alone; nothing else says tortoise
    assert hits[0].score > hits[1].score > 0


def test_lexical_finds_chinese_by_its_terms(embedded_index: InMemoryIndex, mode: Mode) -> None:
    assert ids(search(retrievers.Lexical(embedded_index), "熊猫吃什么", mode)) == ["p"]


def test_a_query_in_several_scripts_finds_by_each(
    embedded_index: InMemoryIndex, mode: Mode
) -> None:
    found = ids(search(retrievers.Lexical(embedded_index, k=5), "🐢 tortoise 熊猫\u200b", mode))
    assert sorted(found) == ["l", "p", "t"]


def test_lexical_from_documents_needs_no_embedder(mode: Mode) -> None:
    retriever = retrievers.Lexical.from_documents(CORPUS, k=1)
    assert ids(search(retriever, "yeast and sugar", mode)) == ["b"]
    assert retriever.retrieve("yeast") == [CORPUS[4]]


def test_dense_finds_by_meaning_most_similar_first(
    embedded_index: InMemoryIndex, mode: Mode
) -> None:
    # "forcast" shares no term with any document, but most of its trigrams with "forecast".
    hits = search(retrievers.Dense(embedded_index, k=2), "forcast", mode)
    assert ids(hits)[0] == "f"
    assert len(hits) == 2 and 1 >= hits[0].score > hits[1].score


def test_where_keeps_the_documents_whose_metadata_match(
    embedded_index: InMemoryIndex, mode: Mode
) -> None:
    dense = retrievers.Dense(embedded_index, k=5, where={"kind": "pet"})
    assert sorted(ids(search(dense, "rain", mode))) == ["l", "t"]
    lexical = retrievers.Lexical(embedded_index, where={"kind": ["news", "food"]})
    assert sorted(ids(search(lexical, "tortoise rain yeast", mode))) == ["b", "f"]


def test_min_score_leaves_out_what_scores_below_it(
    embedded_index: InMemoryIndex, mode: Mode
) -> None:
    everything = search(retrievers.Dense(embedded_index, k=5), "tortoise", mode)
    threshold = everything[1].score
    kept = search(retrievers.Dense(embedded_index, k=5, min_score=threshold), "tortoise", mode)
    assert kept == everything[:2]
    lexical = retrievers.Lexical(embedded_index, min_score=1e9)
    assert search(lexical, "tortoise", mode) == []


def test_mmr_passes_over_a_copy_that_dense_ranks_second(
    openai_server: OpenAIServer, mode: Mode
) -> None:
    index = InMemoryIndex(OpenAIEmbeddings(base_url=openai_server.base_url, api_key=TEST_API_KEY))
    texts = {
        "a": "tortoise shells",
        "copy": "tortoise shells tortoise shells",
        "b": "tortoise eggs",
    }
    index.upsert([Document(text, id=id_) for id_, text in texts.items()])
    assert ids(search(retrievers.Dense(index, k=2), "tortoise shells", mode)) == ["a", "copy"]
    mmr = retrievers.MMR(index, k=2, fetch_k=3, diversity=0.7)
    assert ids(search(mmr, "tortoise shells", mode)) == ["a", "b"]
    assert ids(search(retrievers.MMR(index, k=2, diversity=0), "tortoise shells", mode)) == [
        "a",
        "copy",
    ]


def test_hybrid_fuses_by_reciprocal_rank_and_finds_what_either_alone_misses(
    embedded_index: InMemoryIndex, mode: Mode
) -> None:
    lexical = retrievers.Lexical(embedded_index, k=5)
    dense = retrievers.Dense(embedded_index, k=5)
    hybrid = retrievers.Hybrid(lexical, dense, k=3)
    query = "forcast tortoise"  # the typo only dense reads; tortoise both
    by_terms, by_meaning = ids(lexical.search(query)), ids(dense.search(query))
    assert "f" not in by_terms and "f" in by_meaning
    hits = search(hybrid, query, mode)
    assert "f" in ids(hits)
    expected: dict[str, float] = {}
    for ranking in (by_terms, by_meaning):
        for rank, id_ in enumerate(ranking, 1):
            expected[id_] = expected.get(id_, 0.0) + 1 / (RANK_CONSTANT + rank)
    best = sorted(expected, key=lambda id_: -expected[id_])[:3]
    assert ids(hits) == best
    assert [hit.score for hit in hits] == pytest.approx([expected[id_] for id_ in best])


def test_hybrid_weights_favour_one_ranking(mode: Mode) -> None:
    first = Ranked(["a", "b"])
    second = Ranked(["b", "a"])
    assert ids(search(retrievers.Hybrid(first, second, k=1, weights=[2, 1]), "q", mode)) == ["a"]
    assert ids(search(retrievers.Hybrid(first, second, k=1, weights=[1, 2]), "q", mode)) == ["b"]
    # A tie goes to the document found first.
    assert ids(search(retrievers.Hybrid(first, second, k=2), "q", mode)) == ["a", "b"]


def test_hybrid_from_index_asks_each_for_fetch_k(embedded_index: InMemoryIndex) -> None:
    hybrid = retrievers.Hybrid.from_index(embedded_index, k=2, fetch_k=5, where={"kind": "pet"})
    lexical, dense = hybrid.retrievers
    assert isinstance(lexical, retrievers.Lexical) and isinstance(dense, retrievers.Dense)
    assert (lexical.k, dense.k, hybrid.k) == (5, 5, 2)
    assert lexical.where == dense.where == {"kind": "pet"}
    assert set(ids(hybrid.search("tortoise"))) == {"t", "l"}


class Ranked(Retriever):
    """Finds the documents named, in that order."""

    def __init__(self, order: list[str]) -> None:
        self.order = order

    def _search(self, query: str) -> list[Hit]:
        return [Hit(Document(id_, id=id_), 1.0) for id_ in self.order]


class Meeting(Retriever):
    """Finds nothing until the other member has started too: two run one after the other
    would wait forever (bounded by the barrier's timeout, then fail)."""

    def __init__(self, barrier: threading.Barrier) -> None:
        self.barrier = barrier

    def _search(self, query: str) -> list[Hit]:
        self.barrier.wait()
        return [Hit(Document(query, id=str(id(self))), 1.0)]

    async def _asearch(self, query: str) -> list[Hit]:
        await asyncio.to_thread(self.barrier.wait)
        return [Hit(Document(query, id=str(id(self))), 1.0)]


@pytest.mark.timeout(30)
def test_hybrid_runs_its_retrievers_side_by_side(mode: Mode) -> None:
    barrier = threading.Barrier(2, timeout=10)
    hybrid = retrievers.Hybrid(Meeting(barrier), Meeting(barrier), k=4)
    assert len(search(hybrid, "q", mode)) == 2


class Failing(Retriever):
    def _search(self, query: str) -> list[Hit]:
        raise LookupError("the index is gone")


class Waiting(Retriever):
    def __init__(self) -> None:
        self.cancelled = False

    def _search(self, query: str) -> list[Hit]:
        return []

    async def _asearch(self, query: str) -> list[Hit]:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return []


@pytest.mark.timeout(30)
def test_a_failing_member_fails_the_hybrid_and_stops_the_others() -> None:
    with pytest.raises(LookupError, match="the index is gone"):
        retrievers.Hybrid(Failing(), Ranked(["a"])).search("q")
    waiting = Waiting()

    async def main() -> None:
        with pytest.raises(LookupError):
            await retrievers.Hybrid(waiting, Failing()).asearch("q")
        await asyncio.sleep(0)

    asyncio.run(main())
    assert waiting.cancelled


HOSTILE_QUERIES = [
    ("", QueryError, "empty"),
    ("  \n\t", QueryError, "only spaces"),
    ("\u3000\u3000", QueryError, "only spaces"),  # ideographic spaces
    ("x" * (MAX_QUERY_CHARS + 1), QueryError, f"{MAX_QUERY_CHARS + 1:,} characters"),
    ("tea\0time", QueryError, "NUL character at position 3"),
    ("caf\ud800", QueryError, "lone surrogate at position 3"),
    (None, RetrieverTypeError, "a query must be a str, got NoneType"),
    (b"bytes", RetrieverTypeError, "got bytes"),
    (["tortoise"], RetrieverTypeError, "got list"),
]


@pytest.mark.parametrize(("query", "error", "message"), HOSTILE_QUERIES)
def test_every_retriever_names_a_query_it_cannot_search_for(
    embedded_index: InMemoryIndex, mode: Mode, query: object, error: type, message: str
) -> None:
    for retriever in (
        retrievers.Lexical(embedded_index),
        retrievers.Dense(embedded_index),
        retrievers.MMR(embedded_index),
        retrievers.Hybrid.from_index(embedded_index),
    ):
        with pytest.raises(error, match=message):
            search(retriever, query, mode)


def test_the_longest_query_taken_is_searched(embedded_index: InMemoryIndex) -> None:
    longest = ("tortoise " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]
    assert ids(retrievers.Lexical(embedded_index, k=1).search(longest)) == ["t"]


def test_wrong_settings_are_named_when_the_retriever_is_built(
    embedded_index: InMemoryIndex,
) -> None:
    cases: list[tuple[object, type, str]] = [
        (lambda: retrievers.Lexical(embedded_index, k=0), RetrieverConfigError, "k must be at"),
        (lambda: retrievers.Dense(embedded_index, k="3"), RetrieverTypeError, "k must be a who"),  # type: ignore[arg-type]
        (lambda: retrievers.Dense(embedded_index, k=True), RetrieverTypeError, "got bool"),
        (lambda: retrievers.MMR(embedded_index, fetch_k=0), RetrieverConfigError, "fetch_k"),
        (lambda: retrievers.MMR(embedded_index, diversity=2), RetrieverConfigError, "0 to 1"),
        (lambda: retrievers.Dense(embedded_index, where="pet"), RetrieverTypeError, "where"),  # type: ignore[arg-type]
        (
            lambda: retrievers.Dense(embedded_index, min_score=float("nan")),
            RetrieverConfigError,
            "min_score must be a finite",
        ),
        (lambda: retrievers.Lexical(object()), RetrieverTypeError, "no keyword_search"),  # type: ignore[arg-type]
        (lambda: retrievers.Dense("index"), RetrieverTypeError, "has no search"),  # type: ignore[arg-type]
        (
            lambda: retrievers.Hybrid(retrievers.Dense(embedded_index)),
            RetrieverConfigError,
            "two retrievers or more, got 1",
        ),
        (
            lambda: retrievers.Hybrid(retrievers.Dense(embedded_index), "lexical"),  # type: ignore[arg-type]
            RetrieverTypeError,
            "got str",
        ),
        (
            lambda: retrievers.Hybrid(Ranked([]), Ranked([]), weights=[1]),
            RetrieverConfigError,
            "1 weights for 2 retrievers",
        ),
        (
            lambda: retrievers.Hybrid(Ranked([]), Ranked([]), weights=[0, 0]),
            RetrieverConfigError,
            "one at least above 0",
        ),
        (
            lambda: retrievers.Hybrid(Ranked([]), Ranked([]), weights=[-1, 2]),
            RetrieverConfigError,
            "0 or more",
        ),
    ]
    for build, error, message in cases:
        with pytest.raises(error, match=message):
            build()  # type: ignore[operator]


def test_a_retriever_is_named_after_its_class_unless_it_says() -> None:
    class Named(Ranked):
        name = "my-docs"

    assert (retrievers.Lexical.name, retrievers.Hybrid.name, Ranked.name) == (
        "Lexical",
        "Hybrid",
        "Ranked",
    )
    assert Named(["a"]).name == "my-docs"
