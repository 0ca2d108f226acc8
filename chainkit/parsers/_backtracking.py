"""Whether a regular expression could take exponential time on some text (catastrophic
backtracking), read from its parse tree before it is ever run.

Two shapes make Python's backtracking engine try exponentially many ways on a text that
almost matches: a repeated part that holds a repeat itself (`(a+)+`, `(\\w*,?)*`), and a
repeated choice whose alternatives can begin alike (`(a|ab)*`, `(\\w|\\d)+`). Both are refused,
conservatively: some such patterns are safe, and can be written so that the check sees it,
with a possessive inner repeat (`a++`) or an atomic group (`(?>...)`), which never backtrack.
A part is repeated when it may come more than once; inside it, any repeat of varying count
(`?` included) is refused.
"""

from __future__ import annotations

import importlib
from typing import Any, Final

# The engine's own parser (no public API gives the tree; typeshed has no stubs for it).
_parser: Any = importlib.import_module("re._parser")
_constants: Any = importlib.import_module("re._constants")

_REPEATS: Final = frozenset(("MAX_REPEAT", "MIN_REPEAT"))
_NEVER_BACKTRACK: Final = frozenset(("POSSESSIVE_REPEAT", "ATOMIC_GROUP"))
_IGNORECASE: Final = 2  # re.IGNORECASE

Intervals = list[tuple[int, int]] | None
"""The characters a part may begin with, as code point ranges; None for any (or unknown)."""


def backtracking_risk(pattern: str, flags: int) -> str | None:
    """What in `pattern` could backtrack exponentially, or None; re.error for no pattern."""
    tree = _parser.parse(pattern, flags)
    return _risk_in(list(tree), tree.state.flags, repeated=False)


def _risk_in(items: list[Any], flags: int, *, repeated: bool) -> str | None:
    for op, argument in items:
        name = str(op)
        if name in _NEVER_BACKTRACK:
            continue
        if name in _REPEATS:
            low, high, body = argument
            many = high == _constants.MAXREPEAT or high > 1
            if repeated and low != high:
                return "a repeat inside a repeated part (as in (a+)+)"
            risk = _risk_in(list(body), flags, repeated=repeated or many)
            if risk is not None:
                return risk
        elif name == "BRANCH":
            alternatives = [list(branch) for branch in argument[1]]
            if repeated and _overlap([_first(branch, flags) for branch in alternatives]):
                return "a repeated choice whose alternatives can begin alike (as in (a|ab)*)"
            for branch in alternatives:
                risk = _risk_in(branch, flags, repeated=repeated)
                if risk is not None:
                    return risk
        else:
            for child in _children(name, argument):
                risk = _risk_in(child, flags, repeated=repeated)
                if risk is not None:
                    return risk
    return None


def _children(name: str, argument: Any) -> list[list[Any]]:
    """The subpatterns inside a group, a lookaround or a conditional."""
    if name == "SUBPATTERN":
        return [list(argument[3])]
    if name in ("ASSERT", "ASSERT_NOT"):
        return [list(argument[1])]
    if name == "GROUPREF_EXISTS":
        return [list(part) for part in argument[1:] if part is not None]
    return []


def _first(items: list[Any], flags: int) -> Intervals:
    """The characters `items` may begin with (None: any, or it may match nothing)."""
    if not items:
        return None
    op, argument = items[0]
    name = str(op)
    if name == "LITERAL":
        return _literal(argument, flags)
    if name == "IN":
        return _set(argument, flags)
    if name == "SUBPATTERN":
        return _first(list(argument[3]), flags)
    if name in _REPEATS and argument[0] > 0:
        return _first(list(argument[2]), flags)
    return None


def _literal(code: int, flags: int) -> Intervals:
    if flags & _IGNORECASE:
        char = chr(code)
        return [(ord(each), ord(each)) for each in {char.lower(), char.upper()} if len(each) == 1]
    return [(code, code)]


def _set(members: list[Any], flags: int) -> Intervals:
    found: list[tuple[int, int]] = []
    for op, argument in members:
        name = str(op)
        if name == "LITERAL":
            found += _literal(argument, flags) or []
        elif name == "RANGE" and not flags & _IGNORECASE:
            found.append(argument)
        else:  # a category, a negated set, a range whose case folding is not worked out
            return None
    return found


def _overlap(firsts: list[Intervals]) -> bool:
    seen: list[tuple[int, int]] = []
    for intervals in firsts:
        if intervals is None:
            return True
        for low, high in intervals:
            if any(low <= other_high and other_low <= high for other_low, other_high in seen):
                return True
        seen += intervals
    return False
