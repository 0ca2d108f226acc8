"""A small lexical matcher that handles English words and Chinese text.

English is split into lower-case words; runs of CJK characters into bigrams (and single
characters, weighted low), since Chinese has no spaces between words.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

_STOP_WORDS = frozenset(
    (
        *("a", "an", "and", "are", "can", "could", "do", "does", "for", "from", "give", "how"),
        *("i", "in", "is", "it", "me", "my", "of", "on", "or", "please", "the", "this", "to"),
        *("what", "whats", "which", "who", "why", "will", "with", "you", "your", "tell", "get"),
        *("use", "used", "using"),
    )
)
_STOP_CHARS = frozenset("我你他她它的了吗呢吧啊是个一在有和就也都要请给")
_ARITHMETIC_CHARS = frozenset("0123456789.,+-*/()^×÷% ")
_FUNCTIONS = frozenset(("sqrt", "abs", "round", "min", "max", "floor", "ceil", "exp", "log", "pi"))
_OPERATORS = frozenset("+-*/^×÷%")
MATH_TOKENS = frozenset(("calculator", "calculate", "math", "arithmetic", "expression", "计算"))
"""Tokens a question with an arithmetic expression in it is taken to contain."""


def _is_cjk(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf"


def _stem(word: str) -> str:
    """A plural's singular, roughly: "numbers" -> "number", "classes" -> "class"."""
    if word.endswith("sses"):
        return word[:-2]
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def tokens(text: str) -> dict[str, float]:
    """Token → weight: words and CJK bigrams weigh 1, single CJK characters 0.25."""
    weights: dict[str, float] = {}
    word: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if word:
            token = _stem("".join(word))
            if token not in _STOP_WORDS:
                weights[token] = 1.0
            word.clear()
        if run:
            for index, char in enumerate(run):
                if char not in _STOP_CHARS:
                    weights.setdefault(char, 0.25)
                if index + 1 < len(run):
                    weights[char + run[index + 1]] = 1.0
            run.clear()

    for char in text.lower():
        if _is_cjk(char):
            if word:
                flush()
            run.append(char)
        elif char.isalnum() and char.isascii():
            if run:
                flush()
            word.append(char)
        else:
            flush()
    flush()
    return weights


def find_expression(text: str) -> str | None:
    """The longest stretch of `text` that looks like arithmetic: digits, operators, brackets,
    and the calculator's function names ("sqrt(2)/3"); dates ("2024-01-01") are not."""
    best = ""
    for candidate in _arithmetic_runs(unicodedata.normalize("NFKC", text)):
        if (
            len(candidate) > len(best)
            and any(c.isdigit() for c in candidate)
            and any(c in _OPERATORS for c in candidate.lstrip("+-"))
            and not _looks_like_date(candidate)
        ):
            best = candidate
    return best or None


def _arithmetic_runs(text: str) -> list[str]:
    """Maximal runs of arithmetic characters and known function names, trimmed of what
    cannot start or end an expression."""
    runs: list[str] = []
    start: int | None = None
    index = 0
    while index <= len(text):
        char = text[index] if index < len(text) else "\0"
        if char.isascii() and char.isalpha():
            end = index
            while end < len(text) and text[end].isascii() and text[end].isalpha():
                end += 1
            if text[index:end].lower() in _FUNCTIONS:
                start = index if start is None else start
            elif start is not None:
                runs.append(_trim(text[start:index]))
                start = None
            index = end
            continue
        if char in _ARITHMETIC_CHARS:
            start = index if start is None else start
        elif start is not None:
            runs.append(_trim(text[start:index]))
            start = None
        index += 1
    return runs


def _trim(run: str) -> str:
    return run.lstrip(" .,*/^×÷%)").rstrip(" .,+-*/^×÷%(")


def _looks_like_date(candidate: str) -> bool:
    parts = candidate.split("-")
    return len(parts) == 3 and all(p.isdigit() for p in parts) and len(parts[0]) == 4


def best_match(query: str, candidates: Iterable[tuple[str, str]]) -> tuple[int, float]:
    """Index and score of the (name, description) candidate sharing most weight with `query`;
    (-1, 0.0) when none shares anything. The first candidate wins a tie."""
    wanted = tokens(query)
    if find_expression(query) is not None:
        wanted.update(dict.fromkeys(MATH_TOKENS, 1.0))
    best_index, best_score = -1, 0.0
    for index, (name, description) in enumerate(candidates):
        have = tokens(f"{name} {description}")  # "random_number" splits into its words
        score = sum(weight for token, weight in wanted.items() if token in have)
        if score > best_score:
            best_index, best_score = index, score
    return best_index, best_score
