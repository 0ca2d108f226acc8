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

import functools
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
_UNSPACED_RANGES = (
    _CJK_RANGES + "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u0f00-\u0fff"  # Tibetan
)
"""Scripts written without spaces between words, vowel signs and tone marks included (they
are no letters to `str.isalnum`, which would cut Thai words at them)."""
CJK_RUN = re.compile(f"[{_CJK_RANGES}]+")
_CJK_CHAR = re.compile(f"[{_CJK_RANGES}]")
LETTER_GRAM = 3
"""How many characters make a term in an unspaced alphabet (Thai, Lao, Khmer, Myanmar,
Tibetan): a letter or a pair is no word; three are close to a syllable."""
_UNSPACED_CHAR = re.compile(f"[{_UNSPACED_RANGES}]")
# A run of an unspaced script, or a word: letters and digits of other scripts.
_PIECE = re.compile(f"([{_UNSPACED_RANGES}]+)|([^\\W_{_UNSPACED_RANGES}]+)")
# No doubled letter is dropped from these: "fill" + "ing", "pass" + "ed", "buzz" + "ing".
_KEPT_DOUBLES = frozenset("lsz")


def is_cjk(char: str) -> bool:
    """Whether `char` belongs to a script written without spaces between words (CJK, Thai,
    Lao, Khmer, Myanmar, Tibetan)."""
    return _UNSPACED_CHAR.fullmatch(char) is not None


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
    numbers), and for each run of an unspaced script its bigrams and its characters (no stop
    characters)."""
    for run, word in _pieces(text):
        yield from _run_terms(run) if run else _name_terms(word)


def weight(term: str) -> float:
    """How much a term says: a lone CJK character little, anything else 1."""
    return SINGLE_CHAR_WEIGHT if len(term) == 1 and is_cjk(term) else 1.0


def tokens(text: str) -> dict[str, float]:
    """Term -> weight, each distinct term of `text` once (see `terms` and `weight`)."""
    found: dict[str, float] = {}
    for run, word in _pieces(text):
        if run:
            found.update((term, weight(term)) for term in _run_terms(run))
        else:  # a word's terms hold no unspaced script: each weighs 1
            for term in _name_terms(word):
                found[term] = 1.0
    return found


def _pieces(text: str) -> list[tuple[str, str]]:
    """(run, "") for each run of an unspaced script of `text`, ("", word) for each word."""
    return _PIECE.findall(unicodedata.normalize("NFKC", text))


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


@functools.lru_cache(maxsize=65536)
def _name_terms(word: str) -> tuple[str, ...]:
    """The terms of a word, split where a camelCase name starts a new word. Cached: the words
    of questions, tool texts and documents recur, and stemming is the slow part of reading
    them. The cache holds a document collection's vocabulary (SciFact's abstracts read 1.8
    times as fast as with 8,192 words; a few MB)."""
    if word.islower() or word.isdigit():  # most words of questions: nothing to split
        return tuple(_word_terms(word))
    start = 0
    found: list[str] = []
    for index in range(1, len(word)):
        if _starts_word(word, index):
            found.extend(_word_terms(word[start:index]))
            start = index
    found.extend(_word_terms(word[start:]))
    return tuple(found)


def _word_terms(word: str) -> Iterator[str]:
    term = stem(word.lower())
    if term not in STOP_WORDS and not term.isdigit():  # numbers are no topic
        yield term


def _run_terms(run: str) -> Iterator[str]:
    if not _CJK_CHAR.match(run):  # an alphabet (Thai, Khmer...): its letters say nothing alone
        yield from _grams(run, LETTER_GRAM)
        return
    for index, char in enumerate(run):
        if char not in STOP_CHARS:
            yield char
        if index + 1 < len(run):
            yield run[index : index + 2]


def _grams(run: str, size: int) -> Iterator[str]:
    """The `size`-character pieces of `run`, overlapping; the run itself when shorter."""
    if len(run) <= size:
        yield run
        return
    for index in range(len(run) - size + 1):
        yield run[index : index + size]
