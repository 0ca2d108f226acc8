"""Turns text into the terms lexical matching compares: English words and Chinese text alike.

Words are lower-cased and lightly stemmed ("forecasts", "forecasting" -> "forecast"), and names
split at underscores, hyphens and case changes ("getStockPrice" -> "stock", "price"); runs
of CJK characters (and Japanese kana and Korean hangul) become bigrams, and single
characters weighted low, since these scripts put no spaces between words. Stop words and
bare numbers are no terms.

Shared by the offline model (chainkit.llms) and the tool retriever (chainkit.tools), so that
both read a question the same way.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

STOP_WORDS = frozenset(
    (
        *("a", "an", "and", "are", "can", "could", "do", "does", "for", "from", "give", "how"),
        *("i", "in", "is", "it", "me", "my", "of", "on", "or", "please", "the", "this", "to"),
        *("what", "whats", "which", "who", "why", "will", "with", "you", "your", "tell", "get"),
        *("use", "used", "using"),
    )
)
STOP_CHARS = frozenset("我你他她它的了吗呢吧啊是个一在有和就也都要请给")
"""CJK characters too common to be a term alone; they still count within bigrams."""
SINGLE_CHAR_WEIGHT = 0.25
"""The weight of a lone CJK character, against 1 for a word or a bigram."""

_CJK_RANGES = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs, extension A, compatibility
    "\uac00-\ud7af"  # hangul syllables
    "\U00020000-\U0002fa1f"  # CJK extensions B to F, compatibility supplement
)
CJK_RUN = re.compile(f"[{_CJK_RANGES}]+")
_CJK_CHAR = re.compile(f"[{_CJK_RANGES}]")
# No doubled letter is dropped from these: "fill" + "ing", "pass" + "ed", "buzz" + "ing".
_KEPT_DOUBLES = frozenset("lsz")


def is_cjk(char: str) -> bool:
    """Whether `char` belongs to a script written without spaces between words."""
    return _CJK_CHAR.fullmatch(char) is not None


def stem(word: str) -> str:
    """A lower-case word's stem, by a few suffix rules: "numbers" -> "number", "classes" ->
    "class", "cities" -> "city", "booking" -> "book", "shipped" -> "ship", "computing" and
    "compute" -> "comput". Words of three letters or fewer are left as they are."""
    if len(word) <= 3:
        return word
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            if word[-1] == word[-2] and word[-1] not in _KEPT_DOUBLES:
                word = word[:-1]
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def terms(text: str) -> Iterator[str]:
    """The terms of `text` in order, repeats included: stemmed words (no stop words, no bare
    numbers), and for each run of CJK characters its bigrams and its characters (no stop
    characters)."""
    text = unicodedata.normalize("NFKC", text)
    word_start: int | None = None
    run_start: int | None = None
    for index, char in enumerate(text):
        if is_cjk(char):
            if word_start is not None:
                yield from _word_terms(text[word_start:index])
                word_start = None
            if run_start is None:
                run_start = index
            continue
        if run_start is not None:
            yield from _run_terms(text[run_start:index])
            run_start = None
        if char.isalnum():
            if word_start is None:
                word_start = index
            elif _starts_word(text, index):
                yield from _word_terms(text[word_start:index])
                word_start = index
        elif word_start is not None:
            yield from _word_terms(text[word_start:index])
            word_start = None
    if word_start is not None:
        yield from _word_terms(text[word_start:])
    if run_start is not None:
        yield from _run_terms(text[run_start:])


def weight(term: str) -> float:
    """How much a term says: a lone CJK character little, anything else 1."""
    return SINGLE_CHAR_WEIGHT if len(term) == 1 and is_cjk(term) else 1.0


def tokens(text: str) -> dict[str, float]:
    """Term -> weight, each distinct term of `text` once (see `terms` and `weight`)."""
    return {term: weight(term) for term in terms(text)}


def _starts_word(text: str, index: int) -> bool:
    """Whether a camelCase name starts a new word at `index`: "stockPrice" at "P",
    "base64Encode" at "E", and "HTTPServer" at "S" (an upper-case letter followed by a
    lower-case one)."""
    char, before = text[index], text[index - 1]
    if not char.isupper():
        return False
    if before.islower() or before.isdigit():
        return True
    return before.isupper() and index + 1 < len(text) and text[index + 1].islower()


def _word_terms(word: str) -> Iterator[str]:
    term = stem(word.lower())
    if term not in STOP_WORDS and not term.isdigit():  # numbers are no topic
        yield term


def _run_terms(run: str) -> Iterator[str]:
    for index, char in enumerate(run):
        if char not in STOP_CHARS:
            yield char
        if index + 1 < len(run):
            yield run[index : index + 2]
