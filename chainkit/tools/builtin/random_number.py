"""RandomNumber: a random integer in a range the model may give in words."""

from __future__ import annotations

import random
import re

from chainkit._text import counted, quoted
from chainkit.tools._input import normalized
from chainkit.tools.base import Tool, ToolError

_QUOTED = 80
"""The most of a model's input an error quotes."""

DEFAULT_RANGE = (1, 100)
_MAX_BOUND_DIGITS = 18  # bounds within ±10^18
# An integer: digits, or digits grouped in threes by commas ("1,000,000").
_INTEGER = re.compile(r"\d{1,3}(?:,\d{3})++(?!\d)|\d++")


class RandomNumber(Tool):
    """Returns a random integer, by default from 1 to 100 inclusive.

    The input may give the range as two integers with anything between them: "1-100",
    "1 to 100", "between -5 and 5", "1到6", "1~6", "-10--8", "1,000 to 2,000"; the bounds may
    come in either order. It is read as every built-in tool reads its input (NFKC, any dash as
    "-"), so "１－６" is "1-6". One integer N, at least 1, means 1 to N. Input without numbers,
    such as an empty string or the user's question, means the default range. Bounds are whole
    numbers within ±10^18. `seed` makes the numbers repeatable.
    """

    name = "random_number"
    input_required = False  # without one: the default range / UTC
    blocking = False
    description = (
        'Returns a random integer. Input: an optional range such as "1-100", "1 to 100" or '
        '"between -5 and 5"; one number N means 1 to N; the default is 1 to 100.'
    )

    def __init__(self, *, seed: int | None = None) -> None:
        self._random = random.Random(seed)  # noqa: S311 - not for security

    def call(self, input: str) -> str:
        low, high = parse_range(input)
        return str(self._random.randint(low, high))


def parse_range(text: str) -> tuple[int, int]:
    """The inclusive range `text` asks for; ToolError naming the problem if it is not one."""
    text = normalized(text)
    numbers = _integers(text)
    if not numbers:
        return DEFAULT_RANGE
    if len(numbers) > 2:
        raise ToolError(
            f'expected a range such as "1-100", got {counted(len(numbers), "number")} in '
            f"{quoted(text, _QUOTED)}"
        )
    if len(numbers) == 1:
        (high,) = numbers
        if high < 1:
            raise ToolError(
                f"one number N means 1 to N, so N must be at least 1, got {high}; "
                f'give both bounds, such as "{high} to 1"'
            )
        return 1, high
    low, high = sorted(numbers)
    return low, high


def _integers(text: str) -> list[int]:
    """Up to three integers in `text`, in order. A "-" right before one is its sign unless a
    number ends just before the dash: "1-100" and "1 - 100" separate, "-5 to 5" and "-10--8"
    have signs."""
    numbers: list[int] = []
    for found in _INTEGER.finditer(text):
        start, end = found.span()
        if text[end : end + 1] == "." and text[end + 1 : end + 2].isdecimal():
            raise ToolError(f"the range must be whole numbers, got {quoted(text, _QUOTED)}")
        digits = found.group().replace(",", "")
        if len(digits) > _MAX_BOUND_DIGITS:
            raise ToolError(f"range bounds must be within ±10^18, got {quoted(text, _QUOTED)}")
        signed = text[start - 1 : start] == "-" and not text[: start - 1].rstrip()[-1:].isdecimal()
        numbers.append(-int(digits) if signed else int(digits))
        if len(numbers) > 2:
            break
    return numbers
