"""How every index chooses among its documents: a metadata filter checked and matched, the
arguments of a search checked, and maximal marginal relevance over the candidates."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from chainkit._search.vectors import dot
from chainkit._text import described
from chainkit.indexes.base import Filter
from chainkit.indexes.errors import IndexConfigError, IndexTypeError

_ANY_OF = (list, tuple, set, frozenset)


def checked_filter(where: object) -> Filter:
    if where is None:
        return {}
    if not isinstance(where, Mapping) or not all(isinstance(key, str) for key in where):
        raise IndexTypeError(f"where must be a mapping of metadata keys, got {described(where)}")
    return where


def matches(metadata: Mapping[str, Any], where: Filter) -> bool:
    """Whether `metadata` has, for each key of `where`, its value or one of its values."""
    for key, wanted in where.items():
        if key not in metadata:
            return False
        value = metadata[key]
        if isinstance(wanted, _ANY_OF) and not isinstance(value, _ANY_OF):
            if not _among(value, wanted):
                return False
        elif value != wanted:
            return False
    return True


def _among(value: object, wanted: Collection[Any]) -> bool:
    try:
        return value in wanted
    except TypeError:  # a value a set cannot hold (a dict) is in no set
        return False


def checked_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise IndexTypeError(f"{name} must be a whole number, got {described(value)}")
    if value < 1:
        raise IndexConfigError(f"{name} must be at least 1, got {value}")
    return value


def checked_diversity(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IndexTypeError(f"diversity must be a number from 0 to 1, got {described(value)}")
    if not 0 <= value <= 1:
        raise IndexConfigError(f"diversity must be from 0 to 1, got {value}")
    return float(value)


def most_relevant_and_diverse(
    candidates: Sequence[tuple[float, Sequence[float]]], k: int, diversity: float
) -> list[int]:
    """The positions of `k` of `candidates` (each its similarity to the query and its unit
    vector), in the order maximal marginal relevance picks them: each time, the one whose
    similarity to the query, less `diversity` times its highest similarity to those picked
    before, is the highest (ties to the earlier candidate)."""
    picked: list[int] = []
    nearest = [-math.inf] * len(candidates)  # each one's highest similarity to those picked
    left = list(range(len(candidates)))

    def marginal(i: int) -> tuple[float, int]:
        penalty = nearest[i] if picked else 0.0
        return (1 - diversity) * candidates[i][0] - diversity * penalty, -i

    while left and len(picked) < k:
        best = max(left, key=marginal)
        picked.append(best)
        left.remove(best)
        for i in left:
            nearest[i] = max(nearest[i], dot(candidates[i][1], candidates[best][1]))
    return picked
