"""Compiler for f-string templates: plain `{name}` fields only, rendered by joining pieces.

Python's own str.format lets a template reach attributes and items of its values
(`{x.__class__.__init__.__globals__}`), which leaks secrets when the template comes from
outside (LangChain's CVE-2025-65106). This compiler accepts identifiers only, so formatting
can never run anything but `str()` on a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chainkit._text import quoted
from chainkit.prompts._messages_as_text import holds_messages, messages_as_text
from chainkit.prompts.errors import PromptError


class FStringTemplate:
    """A compiled f-string template.

    `_pieces` holds the literal text with a placeholder slot per field; `_slots` pairs each
    slot index with the variable that fills it.
    """

    __slots__ = ("_pieces", "_slots", "variables")

    def __init__(self, source: str) -> None:
        pieces, slots = _compile(source)
        self._pieces = pieces
        self._slots = slots
        # dict keys keep first-appearance order while dropping repeats.
        self.variables: list[str] = list(dict.fromkeys(name for _, name in slots))

    def filled(self, values: Mapping[str, str]) -> FStringTemplate:
        """This template with the fields `values` names written in as text."""
        source = []
        for index, piece in enumerate(self._pieces):
            source.append(_escaped(piece) if index % 2 == 0 else "")
        for index, name in self._slots:
            source[index] = _escaped(values[name]) if name in values else "{" + name + "}"
        return FStringTemplate("".join(source))

    def render(self, values: Mapping[str, Any]) -> str:
        parts = self._pieces.copy()
        try:
            for index, name in self._slots:
                value = values[name]
                parts[index] = value if type(value) is str else _text(name, value)
        except KeyError:
            missing = next(name for _, name in self._slots if name not in values)
            raise PromptError.missing(missing) from None
        return "".join(parts)


def _text(name: str, value: object) -> str:
    """A value that is no str, as the text of the field it fills; PromptError for messages."""
    if holds_messages(value):
        raise messages_as_text(name)
    return str(value)


def _compile(source: str) -> tuple[list[str], tuple[tuple[int, str], ...]]:
    """Splits `source` into literal pieces and (piece index, variable) slots in one pass.

    The next '{' and '}' positions are cached and only searched again once passed (absence is
    `end`, never searched again), so the scan stays linear for any mix of braces.
    """
    pieces: list[str] = []
    slots: list[tuple[int, str]] = []
    literal: list[str] = []
    position, end = 0, len(source)
    next_open = _find(source, "{", 0)
    next_close = _find(source, "}", 0)
    while (brace := min(next_open, next_close)) < end:
        literal.append(source[position:brace])
        char = source[brace]
        if source.startswith(char, brace + 1):
            literal.append(char)
            position = brace + 2
        elif char == "}":
            raise PromptError(
                f"single '}}' at position {brace} in template; write '}}}}' for a literal brace",
                field="}",
            )
        elif next_close == end:
            raise PromptError(
                f"single '{{' at position {brace} in template is never closed; "
                "write '{{' for a literal brace",
                field=source[brace : brace + 40],
            )
        else:
            name = source[brace + 1 : next_close]
            if not name.isidentifier():
                field = "{" + name + "}"
                raise PromptError(
                    f"template field {quoted(field, 80)} is not allowed: fields must be plain "
                    "variable names, without attribute access, indexing, positions, "
                    "conversions or format specs",
                    field=field,
                )
            pieces.append("".join(literal))
            literal.clear()
            slots.append((len(pieces), name))
            pieces.append("")
            position = next_close + 1
        if next_open < position:
            next_open = _find(source, "{", position)
        if next_close < position:
            next_close = _find(source, "}", position)
    literal.append(source[position:])
    pieces.append("".join(literal))
    return pieces, tuple(slots)


def _escaped(text: str) -> str:
    """`text` as literal text of a template: braces doubled."""
    return text.replace("{", "{{").replace("}", "}}")


def _find(source: str, char: str, start: int) -> int:
    """Index of `char` at or after `start`, or len(source) when there is none."""
    index = source.find(char, start)
    return index if index >= 0 else len(source)
