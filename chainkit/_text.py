"""Cutting long texts for error messages and logs, the same way everywhere."""

from __future__ import annotations


def shorten(text: str, limit: int) -> str:
    """`text`, or its first `limit - 1` characters and an ellipsis when it is longer."""
    return text if len(text) <= limit else f"{text[: limit - 1]}…"
