"""Errors of output parsers: a reply that does not read (`ParseError`, exported), and a parser
built with an argument of the wrong type or value."""

from __future__ import annotations

from typing import Final

from chainkit._errors import ChainkitError
from chainkit._text import quoted

_SHOWN: Final = 120
"""How much of a reply a ParseError's message shows."""


class ParseError(ChainkitError, ValueError):
    """A reply a parser could not read: the message names the parser, what it `expected`, and
    the reply's `text` (shortened in the message; whole in the attribute), with `detail` saying
    where reading failed when the parser knows."""

    def __init__(self, parser: str, expected: str, text: str, detail: str = "") -> None:
        self.parser = parser
        self.expected = expected
        self.text = text
        self.detail = detail
        got = quoted(text, _SHOWN) if text.strip() else "an empty reply"
        because = f" ({detail})" if detail else ""
        super().__init__(f"{parser} expected {expected}, got {got}{because}")


class ParserTypeError(ChainkitError, TypeError):
    """A parser was built (or given text) of the wrong type; the message names the argument."""


class ParserConfigError(ChainkitError, ValueError):
    """A parser was built with an argument whose value cannot work (no choices, a regex without
    named groups or one that could backtrack exponentially); the message names it."""


class ParserAttributeError(ChainkitError, AttributeError):
    """A parser was asked for a method LangChain's parsers have, such as
    `get_format_instructions`; the message names chainkit's way."""
