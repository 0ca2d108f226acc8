"""How the built-in tools read a model's input text: all of them the same way."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

from chainkit.tools.errors import ToolTypeError

# Dashes NFKC leaves alone, read as the ASCII hyphen-minus ("1–6", "−5 to 5").
_DASHES = str.maketrans(dict.fromkeys("‐‑‒–—―−⁃", "-"))
# Characters that show nothing (zero-width spaces and joiners, byte-order marks, soft hyphens),
# often pasted along with text.
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]+")
# Decimal digits of other scripts ("٣", "३"), which NFKC leaves alone.
_OTHER_DIGITS = re.compile(r"(?:(?![0-9])\d)+")


def normalized(text: str, before: Callable[[str], str] | None = None) -> str:
    """`text` as the built-in tools read it: NFKC (full-width digits, letters and punctuation
    become ASCII), every dash as "-", digits of every script as ASCII digits, and invisible
    characters dropped; so "１－６" reads "1-6", "٣" reads "3" and "ＵＴＣ＋８" reads "UTC+8".
    `before` rewrites non-ASCII text first (the calculator reads superscripts as powers, which
    NFKC would make digits). ToolTypeError when `text` is not a string."""
    if not isinstance(text, str):
        raise ToolTypeError(f"a tool's input is text (str), got {type(text).__name__}")
    if text.isascii():
        return text
    if before is not None:
        text = before(text)
    text = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text)).translate(_DASHES)
    return _OTHER_DIGITS.sub(_ascii_digits, text)


def _ascii_digits(digits: re.Match[str]) -> str:
    return "".join(_ascii_digit(char) for char in digits.group())


@functools.cache
def _ascii_digit(char: str) -> str:
    return str(unicodedata.decimal(char))
