"""`RegexParser`: the named groups of a regular expression's first match in the reply."""

from __future__ import annotations

import re
from typing import Any

from chainkit._text import described, shorten
from chainkit.parsers._backtracking import backtracking_risk
from chainkit.parsers.base import Parser, checked_text
from chainkit.parsers.errors import ParseError, ParserConfigError, ParserTypeError


class RegexParser(Parser):
    """A dict of the named groups (`(?P<name>...)`) of `pattern`'s first match anywhere in
    the reply (None for a group that took no part in it); `ParseError` when nothing matches.

    `pattern` is a str or a compiled `re.Pattern` (its flags kept; `flags` adds to them). A
    pattern that could backtrack exponentially on some text (`(a+)+`, `(a|ab)*`) is refused
    when the parser is built: write its inner repeat possessive (`a++`) or atomic (`(?>a+)`).
    A pattern may still take time growing with the square of the reply's length (`.*x.*y`
    tried at each place); bound what it repeats where replies may be long.
    """

    output_type = dict[str, str | None]

    def __init__(
        self, pattern: str | re.Pattern[str], flags: int = 0, *, max_retries: int = 0
    ) -> None:
        super().__init__(max_retries=max_retries)
        source, given_flags = _source(pattern)
        if isinstance(flags, bool) or not isinstance(flags, int):
            raise ParserTypeError(
                f"RegexParser flags must be re flags (int), got {described(flags)}"
            )
        shown = repr(shorten(source, 200))
        try:
            risk = backtracking_risk(source, given_flags | flags)
        except (re.error, RecursionError) as error:
            raise ParserConfigError(f"RegexParser pattern {shown} is no regex: {error}") from None
        if risk is not None:
            raise ParserConfigError(
                f"RegexParser pattern {shown} could take exponential time on some text: it has "
                f"{risk}. Make the inner repeat possessive (a++, a*+) or atomic ((?>...)), or "
                "bound it"
            )
        # Compiled only once the check passed: the pattern is never run on a reply before.
        try:
            self.pattern = re.compile(source, given_flags | flags)
        except (re.error, RecursionError) as error:  # a look-behind of varying width
            raise ParserConfigError(f"RegexParser pattern {shown} is no regex: {error}") from None
        if not self.pattern.groupindex:
            raise ParserConfigError(
                f"RegexParser pattern {shown} has no named group: name what to take, as in "
                "(?P<answer>.+)"
            )

    def __repr__(self) -> str:
        return f"RegexParser({self.pattern.pattern!r})"

    def parse(self, text: str) -> dict[str, Any]:
        found = self.pattern.search(checked_text(self, text))
        if found is None:
            raise ParseError(self.name, f"text matching {self.pattern.pattern!r}", text)
        return found.groupdict()


def _source(pattern: object) -> tuple[str, int]:
    if isinstance(pattern, re.Pattern) and isinstance(pattern.pattern, str):
        return pattern.pattern, pattern.flags
    if isinstance(pattern, str):
        return pattern, 0
    raise ParserTypeError(
        f"RegexParser pattern must be a str or a compiled str pattern, got {described(pattern)}"
    )
