"""LexicalIndex: Okapi BM25 over documents given as terms, updated one document at a time.

Shared by the tool retriever (chainkit.tools) and the offline model (chainkit.llms), which
both choose tools with it. The terms come from `chainkit._search.terms`; the index only counts them.

Scoring, for each query term t with weight w that a document d holds tf times:
    w · idf(t) · tf · (k1 + 1) / (tf + k1 · (1 - b + b · |d| / avgdl))
with idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)), never negative. The part after w depends
on the term and the document alone (and on N and avgdl): a search adds up, for each of its
terms, that part in each document holding the term (the term's scored posting), touching no
document that shares none. The postings keep each term's counts; a term's scored posting is
made from them the first time a search needs it and kept until a document is added or
removed (which changes N, df and avgdl). So a batch of updates, or a first load of many
documents, costs no pass over every posting: the next searches score only their own terms'.
(50,000 documents of 80 words: built and first searched in 3.3 s rather than 32 s, in 366 MB
rather than 511; a search whose terms were scored already as fast as before; the first use of
a common term costs its posting's length once.)
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import Counter, defaultdict
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)

# BM25's usual parameters: how fast a term's count saturates, how much length normalizes.
K1 = 1.2
B = 0.75
_ROUNDING = 1e-9


class LexicalIndex(Generic[K]):
    """Documents under keys, searched by BM25. Safe to search from several threads, and to
    update while others search. Ties keep the order documents were added in."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next_slot = 0
        self._slots: dict[K, int] = {}
        self._keys: dict[int, K] = {}
        self._lengths: dict[int, int] = {}  # slot -> how many terms its document has
        self._terms: dict[int, tuple[str, ...]] = {}  # slot -> its document's distinct terms
        self._total_length = 0
        # term -> slot -> the term's count (a defaultdict: adding a document's counts is the
        # bulk of loading many, and its C-level miss halves that loop's time)
        self._postings: defaultdict[str, dict[int, int]] = defaultdict(dict)
        # term -> its scored posting (slot -> the term's score in the document for a weight
        # of 1: idf, and tf saturated and length-normalized) and the highest score in it,
        # for the documents as they are now: emptied when they change.
        self._scored: dict[str, tuple[dict[int, float], float]] = {}

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, key: object) -> bool:
        return key in self._slots

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def add(self, key: K, terms: Iterable[str]) -> None:
        """Indexes the document `key` with its terms, repeats counted; a document already under
        `key` is replaced (and counts as added last)."""
        counts = Counter(terms)
        with self._lock:
            self._discard(key)
            slot = self._next_slot
            self._next_slot += 1
            self._slots[key] = slot
            self._keys[slot] = key
            length = counts.total()
            self._lengths[slot] = length
            self._terms[slot] = tuple(counts)
            self._total_length += length
            postings = self._postings
            for term, count in counts.items():
                postings[term][slot] = count
            self._scored.clear()

    def remove(self, key: K) -> bool:
        """Drops the document `key`; False when there is none."""
        with self._lock:
            return self._discard(key)

    def search(self, query: Mapping[str, float], limit: int) -> list[tuple[K, float]]:
        """Up to `limit` (key, score) pairs, best first, of the documents sharing a term with
        `query` (term -> weight); a document scoring nothing is left out."""
        if limit <= 0:
            return []
        with self._lock:
            best = _best(self._scores(query, limit), limit)
            return [(self._keys[slot], score) for slot, score in best if score > 0]

    def search_each(
        self, queries: Sequence[Mapping[str, float]], limit: int, within: Iterable[K]
    ) -> list[list[tuple[K, float]]]:
        """For each query, up to `limit` (key, score) pairs, best first, of the documents under
        `within` (a few keys; one no longer indexed is skipped) that share a term with it. Each
        term's scores in those documents are read once, whatever the number of queries."""
        with self._lock:
            slots = [self._slots[key] for key in within if key in self._slots]
            columns: dict[str, dict[int, float]] = {}
            found = []
            for query in queries:
                totals: dict[int, float] = {}
                for term, weight in query.items():
                    column = columns.get(term)
                    if column is None:
                        posting = self._scored_posting(term)
                        column = columns[term] = _column(posting[0] if posting else {}, slots)
                    for slot, points in column.items():
                        totals[slot] = totals.get(slot, 0.0) + weight * points
                best = _best({s: t for s, t in totals.items() if t > 0}, limit)
                found.append([(self._keys[slot], score) for slot, score in best])
            return found

    def _scores(self, query: Mapping[str, float], limit: int) -> dict[int, float]:
        """Slot -> score of the documents that may be among the best `limit`.

        The query's terms are read rarest first. Once the `limit`-th best score so far is
        higher than the most the terms left could give a document (each term's weight times
        its highest score in a document), no document found by those terms alone can be among
        the best: they only add to the scores of the documents already found (MaxScore,
        Turtle and Flood, 1995), and only to those these terms could still bring up to that
        score. So a search reads few of its common terms' long postings, scores few
        documents, and ranks as if it read them all."""
        scores: dict[int, float] = {}
        get = scores.get
        weighted = self._weighted(query)
        reachable = weighted[0][2] if weighted else 0.0
        for index, (posting, weight, most) in enumerate(weighted):
            # The check reads every score so far, cheaper than adding a posting's score: worth
            # it before a posting a third as long, and only once the terms read could score far
            # more than the terms left (else it seldom passes).
            # The `limit`-th best score is above `most` when `limit` scores are: counted in a
            # comprehension, and only those ranked (a heap over every score costs more).
            if len(scores) >= limit and 3 * len(posting) > len(scores) and reachable > 4 * most:
                above = [score for score in scores.values() if score > most]
                if len(above) >= limit:
                    threshold = _kth_highest(above, limit)
                    return _completed(scores, weighted[index:], threshold)
            if weight == 1.0:  # most terms: no product to take, nor call to get
                for slot, points in posting.items():
                    if slot in scores:
                        scores[slot] += points
                    else:
                        scores[slot] = points
            else:
                for slot, points in posting.items():
                    scores[slot] = get(slot, 0.0) + weight * points
        return scores

    def _weighted(self, query: Mapping[str, float]) -> list[tuple[dict[int, float], float, float]]:
        """For each term of the query that documents hold, rarest first: its posting, its
        weight, and the most it and the commoner terms after it can add to a document's
        score."""
        found = []
        for term, weight in query.items():
            scored = self._scored_posting(term) if weight > 0 else None
            if scored is not None:
                posting, highest = scored
                found.append((len(posting), posting, weight, weight * highest))
        found.sort(key=_length)  # stable: terms as long keep the query's order
        most = 0.0
        weighted = []
        for _, posting, weight, highest in reversed(found):
            most += highest
            weighted.append((posting, weight, most))
        weighted.reverse()
        return weighted

    def _discard(self, key: K) -> bool:
        slot = self._slots.pop(key, None)
        if slot is None:
            return False
        del self._keys[slot]
        self._total_length -= self._lengths.pop(slot)
        for term in self._terms.pop(slot):
            posting = self._postings[term]
            del posting[slot]
            if not posting:
                del self._postings[term]
        self._scored.clear()
        return True

    def _scored_posting(self, term: str) -> tuple[dict[int, float], float] | None:
        """The term's scored posting and its highest score, made from its counts when no
        search since the last change needed it; None when no document holds the term."""
        scored = self._scored.get(term)
        if scored is not None:
            return scored
        counts = self._postings.get(term)
        if not counts:
            return None
        documents, found = len(self._slots), len(counts)
        scale = math.log1p((documents - found + 0.5) / (found + 0.5)) * (K1 + 1)
        # A document's norm, K1 · (1 - b + b · |d| / avgdl), as a constant and a slope.
        average = self._total_length / documents
        constant, slope = (K1 * (1 - B), K1 * B / average) if average else (K1, 0.0)
        lengths = self._lengths
        posting = {
            slot: scale * tf / (tf + constant + slope * lengths[slot])
            for slot, tf in counts.items()
        }
        scored = self._scored[term] = (posting, max(posting.values()))
        return scored


def _completed(
    scores: dict[int, float], rest: list[tuple[dict[int, float], float, float]], threshold: float
) -> dict[int, float]:
    """The documents of `scores` that score at least `threshold` (the `limit`-th best score
    so far, so that `limit` of them do) with the terms `rest` added, with them added. A
    document is dropped as soon as its score and the most the terms left could add fall
    short, so that most are dropped before a single look-up; the others are added up in the
    same order as if every posting were read, to the same scores."""
    # Below by far more than rounding: these bounds add the terms in another order.
    bar = threshold * (1 - _ROUNDING)
    # Most documents fall short before the first look-up: one comparison drops them, without
    # a turn of the loop over the terms (`bar`'s margin covers this subtraction's rounding);
    # it is the first term's check, so that term is added without one.
    (first, first_weight, reach), later = rest[0], rest[1:]
    cut = bar - reach
    found = {}
    for slot, score in scores.items():
        if score < cut:
            continue
        if slot in first:  # most do not hold the term (a test costs less than a get)
            score += first_weight * first[slot]
        for posting, weight, most in later:
            if score + most < bar:
                break
            if slot in posting:
                score += weight * posting[slot]
        else:
            if score >= threshold:  # else `limit` others outrank it
                found[slot] = score
    return found


def _column(posting: dict[int, float], slots: list[int]) -> dict[int, float]:
    """The scores of a posting's term in the documents `slots` that hold it."""
    return {slot: posting[slot] for slot in slots if slot in posting}


def _best(scores: dict[int, float], limit: int) -> list[tuple[int, float]]:
    """The `limit` best (slot, score) pairs, best first, ties earliest slot first: sorted by
    slot, then by score (a stable sort keeps ties in slot order), both in C. Among more than
    eight times `limit`, those below the `limit`-th best score are dropped first: sorting
    pairs costs more than sorting or heaping bare scores."""
    if limit > 0 and len(scores) > 8 * limit:
        threshold = _kth_highest(scores.values(), limit)
        scores = {slot: score for slot, score in scores.items() if score >= threshold}
    ranked = sorted(scores.items())
    ranked.sort(key=_score, reverse=True)
    return ranked[:limit]


def _kth_highest(values: Collection[float], k: int) -> float:
    """The `k`-th highest of `values` (which hold `k` at least): sorted in C when they are
    few, else by a heap, which reads each once."""
    if len(values) < _SORTED_UP_TO:
        return sorted(values)[-k]
    return heapq.nlargest(k, values)[-1]


_SORTED_UP_TO = 256
_score = itemgetter(1)
_length = itemgetter(0)
