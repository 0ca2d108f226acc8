"""Vectors as dense retrieval compares them: a dot product, and a vector scaled to length 1 so
that the dot product of two is their cosine."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence

__all__ = ["dot", "scaled_to_unit"]

dot: Callable[[Sequence[float], Sequence[float]], float] = getattr(
    math, "sumprod", lambda a, b: sum(map(operator.mul, a, b))
)
"""The dot product of two vectors: math.sumprod (Python 3.12+, in C) where there is one."""


def scaled_to_unit(numbers: list[float]) -> list[float] | None:
    """`numbers` scaled to length 1 (all zeros left as they are); None when their length is
    not finite (an infinity or NaN among them). The length is `math.hypot`'s: in C, exact to
    rounding, and never overflowing."""
    length = math.hypot(*numbers)
    if not math.isfinite(length):
        return None
    return [x / length for x in numbers] if length else numbers
