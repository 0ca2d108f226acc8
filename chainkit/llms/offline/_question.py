"""What a question says, read as a model would to call a tool: the arithmetic expression in
it, and what is left once the words that ask for the tool are taken out (the tool's argument).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from chainkit._search.terms import CJK_RUN, STOP_CHARS, STOP_WORDS, stem

_ARITHMETIC_CHARS = frozenset("0123456789.,+-*/()^×÷% ")
_FUNCTIONS = frozenset(("sqrt", "abs", "round", "min", "max", "floor", "ceil", "exp", "log", "pi"))
_OPERATORS = frozenset("+-*/^×÷%")
MATH_TOKENS = frozenset(
    (
        *(stem(word) for word in ("calculator", "calculate", "math", "arithmetic", "expression")),
        "计算",
    )
)
"""Terms of a tool that does arithmetic."""
EXPRESSION_TERM = "\x00arithmetic expression"
"""The term an arithmetic expression in a question stands for, and that a tool doing
arithmetic is given: no text yields it."""
EXPRESSION_WEIGHT = 1.5

# Words that ask for something rather than say what it is about: left out of a tool's argument.
_ASKING_WORDS = STOP_WORDS | frozenset(
    (
        *("s", "t", "about", "any", "at", "be", "between", "by", "check", "current", "find"),
        *("know", "let", "like", "look", "many", "much", "need", "now", "right", "search"),
        *("show", "some", "there", "today", "up", "want", "was", "would"),
    )
)
# The same in Chinese, longest first so that "告诉我" goes before "我".
_ASKING_PHRASES = sorted(
    (
        *("告诉我", "给我", "帮我", "请问", "请", "查一下", "查询", "查", "一下", "看看", "怎么样"),
        *("如何", "是多少", "多少", "是什么", "什么", "几点了", "一个", "现在", "今天", "目前"),
        *("之间", "未来", "最近"),
    ),
    key=len,
    reverse=True,
)
_ASCII_WORD = re.compile(r"[A-Za-z]+")
_STOP_CHARS_TEXT = "".join(sorted(STOP_CHARS))
_NUMBER_STARTS = frozenset("0123456789-")
_EDGE_PUNCTUATION = " \t\r\n?？!！。.,，、:：;；\"'`“”‘’()（）[]【】"


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


def residual(question: str, topic: Mapping[str, float]) -> str:
    """What `question` says besides asking for a tool: the text left once the words that match
    the tool (`topic`, its tokens) and the words of asking are taken out, as a model would
    write the tool's argument. Asked of a weather tool, "北京天气怎么样?" leaves "北京" and
    "what's the weather in Paris?" leaves "Paris"; a word between two numbers stays ("1 to 6").
    """
    kept = list(question)
    for word in _ASCII_WORD.finditer(question):
        lower = word.group().lower()
        if (lower in _ASKING_WORDS or stem(lower) in topic) and not _between_numbers(
            question, *word.span()
        ):
            kept[word.start() : word.end()] = " " * len(lower)
    for run in CJK_RUN.finditer(question):
        text, offset = run.group(), run.start()
        for index in range(len(text) - 1):
            if topic.get(text[index : index + 2]) == 1.0:  # a bigram, not a lone character
                kept[offset + index : offset + index + 2] = "  "
    text = "".join(kept)
    for phrase in _ASKING_PHRASES:
        text = text.replace(phrase, " " * len(phrase))
    words = (word.strip(_EDGE_PUNCTUATION).strip(_STOP_CHARS_TEXT) for word in text.split())
    return " ".join(word for word in words if word)


def _between_numbers(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` stands between two numbers, spaces aside ("1 to 6")."""
    before = start - 1
    while before >= 0 and text[before].isspace():
        before -= 1
    after = end
    while after < len(text) and text[after].isspace():
        after += 1
    return before >= 0 and text[before].isdigit() and text[after : after + 1] in _NUMBER_STARTS
