"""How the built-in tools read a model's input text: all of them the same way."""

from __future__ import annotations

import unicodedata

# Dashes NFKC leaves alone, read as the ASCII hyphen-minus ("1–6", "−5 to 5").
_DASHES = str.maketrans(dict.fromkeys("‐‑‒–—―−⁃", "-"))


def normalized(text: str) -> str:
    """`text` in NFKC form, with every dash as "-": full-width digits, letters and punctuation
    become ASCII, so "１－６" reads "1-6" and "ＵＴＣ＋８" reads "UTC+8"."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text).translate(_DASHES)
