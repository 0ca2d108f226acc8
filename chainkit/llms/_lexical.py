"""A small lexical matcher that handles English words and Chinese text.

English is split into lower-case words; runs of CJK characters into bigrams (and single
characters, weighted low), since Chinese has no spaces between words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping

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
"""Tokens of a tool that does arithmetic."""
EXPRESSION_WEIGHT = 1.5

# Words that ask for something rather than say what it is about: left out of a tool's argument.
_ASKING_WORDS = _STOP_WORDS | frozenset(
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
_STOP_CHARS_TEXT = "".join(sorted(_STOP_CHARS))
_NUMBER_STARTS = frozenset("0123456789-")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
_EDGE_PUNCTUATION = " \t\r\n?？!！。.,，、:：;；\"'`“”‘’()（）[]【】"


def _is_cjk(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf"


def _stem(word: str) -> str:
    """A plural's singular, roughly: "numbers" -> "number", "classes" -> "class"."""
    if word.endswith("sses"):
        return word[:-2]
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def tokens(text: str) -> dict[str, float]:
    """Token → weight: words (not numbers) and CJK bigrams weigh 1, single CJK characters
    0.25."""
    weights: dict[str, float] = {}
    word: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if word:
            token = _stem("".join(word))
            if token not in _STOP_WORDS and not token.isdigit():  # numbers are no topic
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
    (-1, 0.0) when none shares anything. The first candidate wins a tie.

    An arithmetic expression in the query counts as one word about math, worth
    `EXPRESSION_WEIGHT`: enough to pick a calculator when nothing else is asked for, not to
    outweigh the words of another tool ("1-6 的随机数" asks for a random number).
    """
    wanted = tokens(query)
    has_expression = find_expression(query) is not None
    best_index, best_score = -1, 0.0
    for index, (name, description) in enumerate(candidates):
        have = tokens(f"{name} {description}")  # "random_number" splits into its words
        score = sum(weight for token, weight in wanted.items() if token in have)
        if has_expression and not MATH_TOKENS.isdisjoint(have):
            score += EXPRESSION_WEIGHT
        if score > best_score:
            best_index, best_score = index, score
    return best_index, best_score


def residual(question: str, topic: Mapping[str, float]) -> str:
    """What `question` says besides asking for a tool: the text left once the words that match
    the tool (`topic`, its tokens) and the words of asking are taken out, as a model would
    write the tool's argument. Asked of a weather tool, "北京天气怎么样?" leaves "北京" and
    "what's the weather in Paris?" leaves "Paris"; a word between two numbers stays ("1 to 6").
    """
    kept = list(question)
    for word in _ASCII_WORD.finditer(question):
        lower = word.group().lower()
        if (lower in _ASKING_WORDS or _stem(lower) in topic) and not _between_numbers(
            question, *word.span()
        ):
            kept[word.start() : word.end()] = " " * len(lower)
    for run in _CJK_RUN.finditer(question):
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
