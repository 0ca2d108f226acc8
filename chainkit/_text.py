"""Cutting long texts for error messages and logs, the same way everywhere."""

from __future__ import annotations


def shorten(text: str, limit: int) -> str:
    """`text`, or its first `limit - 1` characters and an ellipsis when it is longer."""
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def described(value: object) -> str:
    """A value as an error message shows what was given: its type and its (shortened) repr."""
    return f"{type(value).__name__} {shorten(repr(value), 80)}"
