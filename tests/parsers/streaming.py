"""Feeding a parser's partial reader: a text cut into pieces (each character alone, or at
places Hypothesis chooses), and the partial values the reader hands on."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from chainkit.parsers import Parser

CUTS = st.lists(st.integers(min_value=0, max_value=2_000), max_size=20)
"""Where to cut a text: any places (sorted, those past its end dropped)."""


def pieces(text: str, cuts: list[int]) -> list[str]:
    """`text` cut at `cuts`."""
    places = sorted({cut for cut in cuts if 0 < cut < len(text)})
    return [text[start:end] for start, end in zip([0, *places], [*places, len(text)], strict=True)]


def partials(parser: Parser, chunks: list[str]) -> list[Any]:
    """Every partial value a fresh reader of `parser` hands on, fed `chunks` in turn."""
    reader = parser.reader()
    assert reader is not None
    found: list[Any] = []
    for chunk in chunks:
        found += reader.feed(chunk)
    return found


def by_character(text: str) -> list[str]:
    return list(text)
