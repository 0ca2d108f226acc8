"""Texts for error messages and logs, written the same way everywhere: long ones cut, counts
with their nouns."""

from __future__ import annotations


def shorten(text: str, limit: int) -> str:
    """`text`, or its first `limit - 1` characters and an ellipsis when it is longer."""
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def described(value: object) -> str:
    """A value as an error message shows what was given: its type and its (shortened) repr."""
    return f"{type(value).__name__} {shorten(repr(value), 80)}"


def counted(number: int, noun: str) -> str:
    """`number` `noun`s, in the singular for one: "1 run", "2 runs", "0 runs"."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
