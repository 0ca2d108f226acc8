"""parsers.RegexParser: a regex's named groups; patterns that could backtrack exponentially
refused before they run."""

from __future__ import annotations

import re

import pytest

from chainkit import parsers
from chainkit.parsers._backtracking import backtracking_risk
from chainkit.parsers.errors import ParserConfigError, ParserTypeError


def test_the_named_groups_of_the_first_match_anywhere() -> None:
    parser = parsers.RegexParser(r"Score: (?P<score>\d+)/(?P<out_of>\d+)(?: \((?P<note>\w+)\))?")
    assert parser.parse("Thinking... Score: 7/10 then Score: 9/10") == {
        "score": "7",
        "out_of": "10",
        "note": None,
    }
    assert parser.parse("Score: 7/10 (fair)")["note"] == "fair"


def test_a_compiled_pattern_keeps_its_flags() -> None:
    parser = parsers.RegexParser(re.compile(r"answer: (?P<answer>\w+)", re.IGNORECASE))
    assert parser.parse("ANSWER: Paris") == {"answer": "Paris"}
    assert parsers.RegexParser(r"answer: (?P<a>\w+)", re.I).parse("Answer: x") == {"a": "x"}


def test_no_match_names_the_pattern_and_the_reply() -> None:
    with pytest.raises(parsers.ParseError) as raised:
        parsers.RegexParser(r"(?P<n>\d+)").parse("none at all")
    assert (
        str(raised.value) == r"RegexParser expected text matching '(?P<n>\\d+)', got 'none at all'"
    )


@pytest.mark.parametrize(
    ("pattern", "risk"),
    [
        (r"(?P<x>(a+)+)b", "a repeat inside a repeated part"),
        (r"(?P<x>(?:\s*,\s*\w+)*)", "a repeat inside a repeated part"),
        (r"(?P<x>(a|ab)*)c", "a repeated choice whose alternatives can begin alike"),
        (r"(?P<x>(?:a?a?)*)b", "a repeat inside a repeated part"),
        (r"(?P<x>(x+x+)+y)", "a repeat inside a repeated part"),
        (r"(?P<x>(?:\w|)+)", "a repeated choice whose alternatives can begin alike"),
        (r"(?=(a*)*)(?P<x>.)", "a repeat inside a repeated part"),
    ],
)
def test_a_pattern_that_could_backtrack_exponentially_is_refused_when_built(
    pattern: str, risk: str
) -> None:
    with pytest.raises(
        ParserConfigError, match=f"could take exponential time on some text: it has {risk}"
    ):
        parsers.RegexParser(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?P<x>(?:\s*+,\s*+\w++)*)",  # possessive inner repeats never backtrack
        r"(?P<x>(?>a+)+)b",
        r"(?P<x>(?:foo|bar)+)",
        r"(?P<x>(\w|\d)+)",
        r"(?P<x>(ab){3})",
        r"(?P<x>.*?)=(?P<y>.*)",
    ],
)
def test_patterns_without_that_risk_are_taken(pattern: str) -> None:
    assert backtracking_risk(pattern, 0) is None
    parsers.RegexParser(pattern)


def test_a_refused_pattern_would_have_hung() -> None:
    # What the check keeps out: 2^25 ways to fail on 25 characters (checked with a small count).
    assert backtracking_risk(r"(a+)+b", 0) is not None
    assert re.fullmatch(r"(a+)+b", "a" * 12 + "c") is None


@pytest.mark.parametrize(
    ("pattern", "error", "message"),
    [
        (
            b"(?P<x>a)",
            ParserTypeError,
            "pattern must be a str or a compiled str pattern, got bytes",
        ),
        ("(?P<x>a", ParserConfigError, "is no regex: missing \\)"),
        (r"(?<=a+)(?P<x>b)", ParserConfigError, "is no regex: look-behind requires fixed-width"),
        (r"(\d+)", ParserConfigError, "has no named group"),
    ],
)
def test_wrong_patterns_are_refused_when_built(pattern: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        parsers.RegexParser(pattern)  # type: ignore[arg-type]


def test_flags_must_be_an_int() -> None:
    with pytest.raises(ParserTypeError, match="flags must be re flags"):
        parsers.RegexParser(r"(?P<x>a)", "i")  # type: ignore[arg-type]


def test_a_huge_reply_is_searched_once() -> None:
    text = "x" * 2_000_000 + " answer: 42"
    assert parsers.RegexParser(r"answer: (?P<n>\d+)").parse(text) == {"n": "42"}
