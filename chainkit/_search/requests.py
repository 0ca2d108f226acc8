"""Reads a question as a user writes it: the separate requests it makes, and the words of
request phrasing ("can you", "please", "帮我") that say nothing of what is wanted.

Used by the tool retriever: a question asking for two things ("find a recipe and convert 2
cups to ml") is searched once whole and once per request, so that the shorter request gets a
tool too; and "Help me …" does not select a tool named `help`.
"""

from __future__ import annotations

import re

_JOINING = r"(?:and then|and also|and|then|as well as|plus|additionally|afterwards|finally)"
# A sentence ends at . ? ! ; before a space or the end (not in "3.5", "a.b@c.com" or
# "data.csv"), closing quotes and brackets kept with it; CJK sentence ends need no space.
_SENTENCE_END = r"[.?!;]+[\"'”’)]*(?=\s|$)|[。？！；\n]+"
# Where a request starts: after a sentence end (and a joining word or "also" after it); at a
# joining word within a sentence, or at "also" after a comma ("I would also like" is one
# request); at a comma before "what" or "how" ("the capital of Australia, what is the
# population of Canada"); at an item of a numbered list ("1) ... 2) ...", "1. ... 2. ...");
# at the joining words of Chinese. Never inside a word.
# The lookahead lists the characters these start with (a sentence end, a comma, a space, the
# bracket or digit of a numbered item, the first of a Chinese joining word): most positions
# fail its one test instead of each alternative in turn, half the time for the same matches.
# A new alternative needs its first character there.
_BOUNDARY = re.compile(
    r"(?=[.?!;。？！；\n,\s(\d然并而另还同])"
    rf"(?:(?:{_SENTENCE_END})\s*(?:(?:{_JOINING}|also)\b,?\s*)?"
    rf"|,?\s+{_JOINING}\s+|,\s*(?:also\b,?\s*|(?=(?:what|how)\b))"
    r"|(?<!\S)\(?\d{1,2}[.)]\s+(?=\D)"
    r"|然后|并且|而且|另外|还有|同时)",
    re.IGNORECASE,
)
# The English phrasings share one pair of word boundaries, tested once per position rather
# than once per phrasing: half the time for the same matches. The lookahead lists their first
# letters, so that a word starting otherwise is ruled out by one test, not one per phrasing
# (a third less time again).
_PHRASING = re.compile(
    r"\b(?=[cwphil])(?:(?:can|could|would|will) you|please|help me|i(?:'d| would) like(?: to)?"
    r"|i (?:want|need)(?: to)?|let me know|i'm looking for)\b"
    r"|帮我|帮忙|请|麻烦|我想|我要|能不能|可以吗|一下"
    r"|주세요|싶어요|알려줘|ください|お願いします",
    re.IGNORECASE,
)
MIN_REQUEST_CHARS = 8
"""A piece shorter than this ("and Tokyo") is a list's item, not a request of its own."""


def requests(text: str) -> list[str]:
    """The requests `text` makes, in order: its pieces between sentence ends, joining words
    (and, then, 然后…), questions after a comma and the items of a numbered list, each long
    enough to ask for something; `[text]` when it makes only one."""
    pieces = [piece.strip() for piece in _BOUNDARY.split(text)]
    found = [piece for piece in pieces if len(piece) >= MIN_REQUEST_CHARS]
    return found if len(found) > 1 else [text]


def without_phrasing(text: str) -> str:
    """`text` without the words of request phrasing, in English, Chinese, Korean and
    Japanese."""
    return _PHRASING.sub(" ", text)
