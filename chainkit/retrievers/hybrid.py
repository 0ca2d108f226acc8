"""Hybrid: several retrievers' rankings fused into one, by reciprocal rank fusion.

A document's fused score is the sum, over the rankings that hold it, of its retriever's
weight divided by `RANK_CONSTANT` plus its rank there (1 for the first). Ranks, not scores,
are fused: a BM25 score and a cosine similarity are on scales that do not compare, and a
Hybrid takes any retrievers, whose scores it cannot know the spread of.

Measured (bench/bench_fusion.py, DBpedia-Entity sample, 40 queries, BM25 and
multilingual-e5-small): no fusion with equal weights does better than this one within the
noise (min-max or z-score normalized sums .469-.472 nDCG@10, RRF .463); what helps there is
favouring the stronger retriever (the dense one: `weights=[0.3, 0.7]`, .490; its min-max sum
.511, dense alone .524), a weight that depends on the pair and the data, so none is assumed:
equal weights, unless given."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import Any

from chainkit._threads import submit
from chainkit.documents import Document
from chainkit.indexes import Hit, VectorIndex
from chainkit.retrievers._settings import checked_count, checked_number
from chainkit.retrievers.base import Retriever
from chainkit.retrievers.errors import RetrieverConfigError, RetrieverTypeError
from chainkit.retrievers.index import Dense, Lexical

__all__ = ["Hybrid"]

RANK_CONSTANT = 60
"""How much a first rank counts over later ones: the constant of Cormack et al. (2009)."""


class Hybrid(Retriever):
    """The `k` best documents of `retrievers` (two or more; a `Lexical` and a `Dense` most
    often), their rankings fused (see the module), each weighted by `weights` (1 each by
    default). The retrievers search side by side, in threads or, in async code, as tasks;
    each should find more than `k` (20, say) so that fusing has depth to draw on:
    `Hybrid.from_index(index)` builds such a pair on one index."""

    def __init__(
        self, *retrievers: Retriever, k: int = 4, weights: Sequence[float] | None = None
    ) -> None:
        for retriever in retrievers:
            if not isinstance(retriever, Retriever):
                raise RetrieverTypeError(
                    "Hybrid fuses retrievers (retrievers.Lexical, retrievers.Dense, ...), "
                    f"got {type(retriever).__name__}"
                )
        if len(retrievers) < 2:
            raise RetrieverConfigError(
                f"Hybrid fuses two retrievers or more, got {len(retrievers)}: use the "
                "retriever alone"
            )
        self.retrievers = retrievers
        self.k = checked_count("k", k)
        self.weights = _checked_weights(weights, len(retrievers))

    @classmethod
    def from_index(
        cls,
        index: VectorIndex,
        *,
        k: int = 4,
        fetch_k: int = 20,
        where: Mapping[str, Any] | None = None,
        weights: Sequence[float] | None = None,
    ) -> Hybrid:
        """The `k` best of `index`'s `fetch_k` best by terms (`Lexical`) and its `fetch_k`
        best by meaning (`Dense`), fused; `weights` are the lexical's and the dense's."""
        depth = max(checked_count("k", k), checked_count("fetch_k", fetch_k))
        lexical = Lexical(index, k=depth, where=where)
        dense = Dense(index, k=depth, where=where)
        return cls(lexical, dense, k=k, weights=weights)

    def __repr__(self) -> str:
        members = ", ".join(map(repr, self.retrievers))
        return f"Hybrid({members}, k={self.k}, weights={list(self.weights)})"

    def _search(self, query: str) -> list[Hit]:
        first, *rest = self.retrievers
        # The others each in a worker carrying this context (their runs are this one's
        # children), the first in this thread.
        futures = [submit(retriever.search, query) for retriever in rest]
        rankings = [first.search(query), *(future.result() for future in futures)]
        return fused(rankings, self.weights, self.k)

    async def _asearch(self, query: str) -> list[Hit]:
        import asyncio  # loaded already by the running event loop, not at import

        tasks = [asyncio.ensure_future(each.asearch(query)) for each in self.retrievers]
        try:
            rankings = await asyncio.gather(*tasks)
        finally:
            for task in tasks:  # a retriever that failed leaves none of the others running
                task.cancel()
        return fused(rankings, self.weights, self.k)


def fused(rankings: Sequence[Sequence[Hit]], weights: Sequence[float], k: int) -> list[Hit]:
    """The `k` documents best by reciprocal rank fusion of `rankings`, each weighted, with
    their fused scores; a document is known by its id, ties go to the first found."""
    scores: dict[str, float] = {}
    documents: dict[str, Document] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, hit in enumerate(ranking, 1):
            key = hit.document.id
            scores[key] = scores.get(key, 0.0) + weight / (RANK_CONSTANT + rank)
            documents.setdefault(key, hit.document)
    order = {key: position for position, key in enumerate(documents)}
    best = heapq.nsmallest(k, scores, key=lambda key: (-scores[key], order[key]))
    return [Hit(documents[key], scores[key]) for key in best]


def _checked_weights(weights: Sequence[float] | None, count: int) -> tuple[float, ...]:
    if weights is None:
        return (1.0,) * count
    if isinstance(weights, str) or not isinstance(weights, Sequence):
        raise RetrieverTypeError(f"weights must be a list of numbers, got {weights!r:.80}")
    if len(weights) != count:
        raise RetrieverConfigError(
            f"weights gives {len(weights)} weights for {count} retrievers: give one each"
        )
    checked = tuple(checked_number("a weight", weight) for weight in weights)
    if any(weight < 0 for weight in checked) or not any(checked):
        raise RetrieverConfigError(
            f"weights must be 0 or more, one at least above 0, got {list(weights)}"
        )
    return checked
