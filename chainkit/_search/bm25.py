"""LexicalIndex: Okapi BM25 over documents given as terms, updated one document at a time.

Shared by the tool retriever (chainkit.tools) and the offline model (chainkit.llms), which
both choose tools with it. The terms come from `chainkit._search.terms`; the index only counts them.

Scoring, for each query term t with weight w that a document d holds tf times:
    w · idf(t) · tf · (k1 + 1) / (tf + k1 · (1 - b + b · |d| / avgdl))
with idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)), never negative. The part after idf depends
on the document alone (and on avgdl), so it is kept in the postings: a search only adds up
the postings of its terms, touching no document that shares none. Adding or removing a
document changes avgdl; the postings are brought up to date by the next search, in one pass
over them (a few milliseconds for 1,000 tools), so a batch of updates costs one such pass.
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)

# BM25's usual parameters: how fast a term's count saturates, how much length normalizes.
K1 = 1.2
B = 0.75


class LexicalIndex(Generic[K]):
    """Documents under keys, searched by BM25. Safe to search from several threads, and to
    update while others search. Ties keep the order documents were added in."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next_slot = 0
        self._slots: dict[K, int] = {}
        self._keys: dict[int, K] = {}
        self._counts: dict[int, Counter[str]] = {}
        self._total_length = 0
        # term -> slot -> the document's share of the term's score (tf saturated and
        # length-normalized), kept up to date with avgdl unless `_stale`.
        self._postings: dict[str, dict[int, float]] = {}
        self._stale = False

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
            self._counts[slot] = counts
            self._total_length += counts.total()
            for term in counts:
                self._postings.setdefault(term, {})[slot] = 0.0
            self._stale = True

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
            if self._stale:
                self._renormalize()
            documents = len(self._slots)
            factor = K1 + 1
            scores: dict[int, float] = {}
            get = scores.get
            for term, weight in query.items():
                posting = self._postings.get(term)
                if not posting or weight <= 0:
                    continue
                found = len(posting)
                idf = math.log1p((documents - found + 0.5) / (found + 0.5))
                scale = weight * idf * factor
                for slot, share in posting.items():
                    scores[slot] = get(slot, 0.0) + scale * share
            best = heapq.nlargest(limit, scores.items(), key=_score_then_earliest)
            return [(self._keys[slot], score) for slot, score in best if score > 0]

    def _discard(self, key: K) -> bool:
        slot = self._slots.pop(key, None)
        if slot is None:
            return False
        del self._keys[slot]
        counts = self._counts.pop(slot)
        self._total_length -= counts.total()
        for term in counts:
            posting = self._postings[term]
            del posting[slot]
            if not posting:
                del self._postings[term]
        self._stale = True
        return True

    def _renormalize(self) -> None:
        """Recomputes each posting's share for the current average document length."""
        average = self._total_length / len(self._slots) if self._slots else 0.0
        counts = self._counts
        norms = {
            slot: K1 * (1 - B + B * counts[slot].total() / average) if average else K1
            for slot in counts
        }
        for term, posting in self._postings.items():
            for slot in posting:
                tf = counts[slot][term]
                posting[slot] = tf / (tf + norms[slot])
        self._stale = False


def _score_then_earliest(item: tuple[int, float]) -> tuple[float, int]:
    slot, score = item
    return score, -slot
