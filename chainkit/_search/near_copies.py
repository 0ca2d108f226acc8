"""Near copies: tools whose texts say almost the same thing, such as one operation offered by
two servers (`a_get_current_weather`, `b_get_current_weather`) or written twice by different
APIs. Several copies of one operation would take the few places of a selection from the tools
for the rest of a question, so the retriever offers the first and moves the others after the
distinct candidates (in the spirit of maximal marginal relevance, Carbonell and Goldstein,
1998).

Two tools are near copies when the weighted Jaccard similarity of the terms they are indexed
by reaches `NEAR_COPY_SIMILARITY` (for each term, the smaller of its two counts, summed, over
the larger, summed; a name's words count as often as the index weights them, so the name
weighs most), or `SAME_OPERATION_SIMILARITY` when their sources give them the same name (an MCP
operation from two servers joined with prefixes: the name says they are one operation, and
the servers may describe it in their own words). Each tool's terms are counted once, when it
is added, into a set in which repeats are told apart, so that comparing two tools is one set
intersection, in C; and a fingerprint of that set rules out most pairs with a few operations
on integers first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from itertools import chain

NEAR_COPY_SIMILARITY = 0.65
"""How alike two tools' counted terms must be (weighted Jaccard: the terms both have over the
terms either has, repeats counted) for the later one to count as a copy of the earlier. Tuned
on the dev half of bench/tool_retrieval_bfcl.py, and kept above where operations that differ
only by their verb count as copies (`get_travel_insurance` and `book_travel_insurance` of
bench/tool_retrieval.py's catalog). Higher keeps more copies; lower also moves back look-alike
operations that a question needs together (`store_price` and `store_currency`)."""
SAME_OPERATION_SIMILARITY = 0.3
"""How alike two tools that their sources give the same name must be to count as copies: the
name is evidence of its own, so their texts need agree less (one server describes its
arguments, the other does not). Tuned on the dev half of bench/tool_retrieval_bfcl.py, whose
pooled catalog holds one operation written anew for many questions
(`Restaurants_2_FindRestaurants` four times among the 5 selected). Not any likeness: two
servers may each have a `search` that does something else, whose texts share little."""
FINGERPRINT_BITS = 512
"""The bits of a tool's fingerprint, each set by the terms that hash to it: enough that pairs
of candidates that are no near copies are nearly all told apart by it (in
bench/tool_retrieval_bfcl.py, nearly all of those the selections compare)."""


class CountedTerms:
    """A tool's terms, each repeat told apart ("price", "price#2"...) so that the intersection
    of two such sets holds each term as often as both have it ("#" is in no term); and their
    fingerprint, with how many of the terms it hides (those whose bit another term set); and the
    name its source gives the tool (`operation`)."""

    __slots__ = ("fingerprint", "hidden", "operation", "size", "terms")

    def __init__(self, terms: frozenset[str], operation: str) -> None:
        self.terms = terms
        self.operation = operation
        self.size = len(terms)
        fingerprint = 0
        for term in terms:
            fingerprint |= 1 << (hash(term) % FINGERPRINT_BITS)
        self.fingerprint = fingerprint
        self.hidden = self.size - fingerprint.bit_count()

    def __reduce__(self) -> tuple[type[CountedTerms], tuple[frozenset[str], str]]:
        # The fingerprint is not kept: strings hash differently in another process.
        return CountedTerms, (self.terms, self.operation)


def counted_terms(terms: Iterable[str], operation: str) -> CountedTerms:
    """The terms, each repeat told apart, and their fingerprint, of a tool whose source names
    it `operation`."""
    counts = Counter(terms)
    repeats = [f"{term}#{n}" for term, count in counts.items() for n in range(2, count + 1)]
    return CountedTerms(frozenset(chain(counts, repeats)), operation)


def distinct_first(
    ranking: list[str],
    terms: Mapping[str, CountedTerms],
    count: int,
    offered: Iterable[str] = (),
    kept: Collection[str] = (),
) -> list[str]:
    """`ranking` with its first `count` names that are no near copy of a better-ranked name
    nor of `offered` (named already) first, then the near copies among the names read, then
    the names not read. The names of `kept`, and a name without terms (a tool added or removed
    meanwhile), count as distinct."""
    seen = [terms[name] for name in offered if name in terms]
    distinct: list[str] = []
    copies: list[str] = []
    for position, name in enumerate(ranking):
        if len(distinct) == count:
            return [*distinct, *copies, *ranking[position:]]
        own = terms.get(name)
        if own is not None and name not in kept and _copies_any(own, seen):
            copies.append(name)
            continue
        distinct.append(name)
        if own is not None:
            seen.append(own)
    return [*distinct, *copies]


def _copies_any(own: CountedTerms, seen: list[CountedTerms]) -> bool:
    """Whether `own` is a near copy of one of `seen`. The terms two tools share each set a bit
    in both fingerprints, so they are at most the bits both set plus the fewer terms either
    fingerprint hides: most pairs are ruled out by that bound, without intersecting their
    terms, and whatever the hashes, no near copies are."""
    for other in seen:
        alike = (
            SAME_OPERATION_SIMILARITY if own.operation == other.operation else NEAR_COPY_SIMILARITY
        )
        either = own.size + other.size
        most = (own.fingerprint & other.fingerprint).bit_count() + min(own.hidden, other.hidden)
        if most < alike * (either - most):
            continue
        shared = len(own.terms & other.terms)
        if shared >= alike * (either - shared):
            return True
    return False
