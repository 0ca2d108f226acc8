"""RandomNumber: a random integer in a range the model may give in words."""

from __future__ import annotations

import random

from chainkit.tools.base import Tool, ToolError

DEFAULT_RANGE = (1, 100)
_MAX_BOUND_DIGITS = 18  # bounds within ±10^18


class RandomNumber(Tool):
    """Returns a random integer, by default from 1 to 100 inclusive.

    The input may give the range as two integers with anything between them: "1-100",
    "1 to 100", "between -5 and 5", "1到6". One integer N means 1 to N. Input without numbers,
    such as an empty string or the user's question, means the default range. `seed` makes the
    numbers repeatable.
    """

    name = "random_number"
    description = (
        "Returns a random integer (随机数 随机 random number). Input: an optional range such "
        'as "1-100", "1 to 100" or "between 1 and 100"; the default is 1 to 100.'
    )

    def __init__(self, *, seed: int | None = None) -> None:
        self._random = random.Random(seed)  # noqa: S311 - not for security

    def call(self, input: str) -> str:
        low, high = parse_range(input)
        return str(self._random.randint(low, high))


def parse_range(text: str) -> tuple[int, int]:
    """The inclusive range `text` asks for; ToolError naming the problem if it is not one."""
    numbers = _integers(text)
    if not numbers:
        return DEFAULT_RANGE
    if len(numbers) == 1:
        numbers = [1, numbers[0]]
    if len(numbers) > 2:
        raise ToolError(f'expected a range such as "1-100", got {len(numbers)} numbers in {text!r}')
    low, high = numbers
    if low > high:
        raise ToolError(f"invalid range {low} to {high}: the lower bound is above the upper")
    return low, high


def _integers(text: str) -> list[int]:
    """Up to three integers in `text`, in order. A "-" after a number separates ("1-100",
    "1 - 100"); one elsewhere is a sign ("-5 to 5", "between -5 and -1")."""
    numbers: list[int] = []
    after_number = False  # the last character other than a space ended a number
    dash_is_separator = False
    index = 0
    while index < len(text) and len(numbers) < 3:
        char = text[index]
        if not "0" <= char <= "9":
            if char == "-":
                dash_is_separator = after_number
            if not char.isspace():
                after_number = False
            index += 1
            continue
        start = index
        while index < len(text) and "0" <= text[index] <= "9":
            index += 1
        if text[index : index + 1] == "." and "0" <= text[index + 1 : index + 2] <= "9":
            raise ToolError(f"the range must be whole numbers, got {text!r}")
        if index - start > _MAX_BOUND_DIGITS:
            raise ToolError(f"range bounds must be within ±10^18, got {text!r}")
        negative = text[start - 1 : start] == "-" and not dash_is_separator
        numbers.append(-int(text[start:index]) if negative else int(text[start:index]))
        after_number = True
    return numbers
