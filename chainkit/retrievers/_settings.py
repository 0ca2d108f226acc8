"""The settings every retriever checks when it is built, so that a mistake is named there
rather than at its first search."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from chainkit._text import described
from chainkit.retrievers.errors import RetrieverConfigError, RetrieverTypeError


def checked_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RetrieverTypeError(f"{name} must be a whole number, got {described(value)}")
    if value < 1:
        raise RetrieverConfigError(f"{name} must be at least 1, got {value}")
    return value


def checked_number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RetrieverTypeError(f"{name} must be a number, got {described(value)}")
    if not math.isfinite(value):
        raise RetrieverConfigError(f"{name} must be a finite number, got {value}")
    return float(value)


def checked_where(where: object) -> Mapping[str, Any] | None:
    if where is None:
        return None
    if not isinstance(where, Mapping) or not all(isinstance(key, str) for key in where):
        raise RetrieverTypeError(
            f"where must be a mapping of metadata keys to values, got {described(where)}"
        )
    return where


def checked_index(index: object, retriever: str, *methods: str) -> Any:
    """`index` when it has `methods` (those of `indexes.VectorIndex` a retriever calls)."""
    missing = [name for name in methods if not callable(getattr(index, name, None))]
    if missing:
        raise RetrieverTypeError(
            f"{retriever} searches an index with {' and '.join(methods)}, such as "
            f"indexes.InMemoryIndex(); {described(index)} has no {', '.join(missing)}"
        )
    return index
