"""`ChoiceParser`: one of a set of values (an Enum's members, a Literal's values, or strings)."""

from __future__ import annotations

import enum
import typing
from collections.abc import Sequence
from typing import Any, Final, Literal

from chainkit._text import described, shorten
from chainkit.parsers._answer import bare
from chainkit.parsers.base import Parser, checked_text
from chainkit.parsers.errors import ParseError, ParserConfigError, ParserTypeError

_NAMED: Final = 20
"""How many choices an error message names."""


class ChoiceParser(Parser):
    """One of `choices`: an Enum class (its members, read by value or by name), a
    `Literal[...]` (its values) or a list of strings. The reply is read as a whole, in any case,
    with quotes, bold marks or a full stop around ("**Positive.**"); an exact match wins over
    one in another case. A reply that is none of them raises `ParseError` naming them all.
    `output_type` is the Enum or the Literal (for strings, the `Literal` of them).
    """

    def __init__(self, choices: Any, *, max_retries: int = 0) -> None:
        super().__init__(max_retries=max_retries)
        values, self.output_type = _choices(choices)
        self._texts: list[str] = []
        self._exact: dict[str, object] = {}
        self._folded: dict[str, object] = {}
        for text, value in values:
            self._texts.append(text)
            self._exact.setdefault(bare(text), value)
            self._folded.setdefault(bare(text).casefold(), value)
        if isinstance(choices, type) and issubclass(choices, enum.Enum):
            for member in choices:  # a model sometimes names the member instead
                self._exact.setdefault(member.name, member)
                self._folded.setdefault(member.name.casefold(), member)

    def __repr__(self) -> str:
        return f"ChoiceParser({shorten(', '.join(self._texts), 80)})"

    def parse(self, text: str) -> Any:
        answer = bare(checked_text(self, text))
        if answer in self._exact:
            return self._exact[answer]
        if (folded := answer.casefold()) in self._folded:
            return self._folded[folded]
        raise ParseError(self.name, self._expected(), text)

    def instructions(self) -> str:
        return f"Answer with {self._expected()}, and nothing else."

    def _expected(self) -> str:
        named = ", ".join(repr(text) for text in self._texts[:_NAMED])
        more = f" (and {len(self._texts) - _NAMED} more)" if len(self._texts) > _NAMED else ""
        return f"one of {named}{more}"


def _choices(choices: object) -> tuple[list[tuple[str, object]], Any]:
    """Each choice's text and value, and the output type."""
    values: list[tuple[str, object]]
    if isinstance(choices, type) and issubclass(choices, enum.Enum):
        values = [(str(member.value), member) for member in choices]
        output_type: Any = choices
    elif typing.get_origin(choices) is Literal:
        values = [(str(value), value) for value in typing.get_args(choices)]
        output_type = choices
    elif isinstance(choices, Sequence) and not isinstance(choices, str | bytes):
        if not all(isinstance(choice, str) for choice in choices):
            wrong = next(choice for choice in choices if not isinstance(choice, str))
            raise ParserTypeError(f"ChoiceParser choices must be strings, got {described(wrong)}")
        values = [(choice, choice) for choice in choices]
        output_type = Literal[tuple(choices)] if choices else None
    else:
        raise ParserTypeError(
            "ChoiceParser choices must be an Enum class, a Literal[...] or a list of strings, "
            f"got {described(choices)}"
        )
    if not values:
        raise ParserConfigError("ChoiceParser needs at least one choice, got none")
    blank = [text for text, _ in values if not bare(text)]
    if blank:
        raise ParserConfigError(f"ChoiceParser choices must not be blank, got {blank[0]!r}")
    return values, output_type
