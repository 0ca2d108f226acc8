"""The texts an embedder is given, checked before any is embedded: a list of str, not one str
(a str is a sequence of str too: embedded, it would give one vector per character)."""

from __future__ import annotations

from collections.abc import Sequence

from chainkit._text import described
from chainkit.llms.errors import ModelTypeError


def checked_texts(texts: Sequence[str], for_one_text: str) -> list[str]:
    """`texts` as a list, each a str; one str refused, with the method (`for_one_text`) that
    embeds one text named."""
    if isinstance(texts, str):
        raise ModelTypeError(
            f"embed_documents takes a list of texts, not one str: use {for_one_text}(text) to "
            "embed a single text"
        )
    if not isinstance(texts, Sequence):
        raise ModelTypeError(f"texts must be a list of str, got {described(texts)}")
    return [checked_text(text, f"texts[{index}]") for index, text in enumerate(texts)]


def checked_text(text: object, name: str) -> str:
    if not isinstance(text, str):
        raise ModelTypeError(f"{name} must be a str, got {described(text)}")
    return text
