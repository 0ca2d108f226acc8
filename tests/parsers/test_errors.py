"""parsers.ParseError: what was expected and what came, shown safely and kept whole."""

from __future__ import annotations

import pickle
import re

import pytest

from chainkit import ChainkitError, parsers
from chainkit.parsers.errors import ParserTypeError


def test_a_parse_error_keeps_the_whole_reply_and_shows_it_safely() -> None:
    text = "line one\n\u202eevil\x1b[31m" + "x" * 500
    error = parsers.ParseError("ListParser", "a list", text, "no item in it")
    assert error.text == text and error.expected == "a list" and error.parser == "ListParser"
    message = str(error)
    assert "\n" not in message and "\u202e" not in message and "\x1b" not in message
    assert message.startswith("ListParser expected a list, got 'line one\\n\\u202eevil\\x1b[31mx")
    assert message.endswith("…' (no item in it)") and len(message) < 200
    assert isinstance(error, ChainkitError) and isinstance(error, ValueError)


def test_a_parse_error_crosses_processes_whole() -> None:
    error = parsers.ParseError("BooleanParser", "yes or no", "maybe")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is parsers.ParseError
    assert (str(copy), copy.text, copy.expected) == (str(error), "maybe", "yes or no")


PARSERS = [
    parsers.TextParser(),
    parsers.JSONParser(),
    parsers.ListParser(),
    parsers.BooleanParser(),
    parsers.ChoiceParser(["a"]),
    parsers.DatetimeParser(),
    parsers.RegexParser(r"(?P<x>a)"),
    parsers.TypedParser(list[int]),
]


@pytest.mark.parametrize("parser", PARSERS, ids=lambda parser: parser.name)
def test_every_parser_refuses_text_that_is_no_str_naming_itself(parser: parsers.Parser) -> None:
    with pytest.raises(ParserTypeError, match=rf"^{re.escape(parser.name)}.parse reads a str"):
        parser.parse(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("parser", PARSERS[1:], ids=lambda parser: parser.name)
def test_every_parser_but_text_refuses_an_empty_reply(parser: parsers.Parser) -> None:
    with pytest.raises(parsers.ParseError, match=r"got an empty reply"):
        parser.parse("")


def test_a_parser_of_your_own_that_skips_the_constructor_retries_nothing() -> None:
    class Upper(parsers.Parser):
        def __init__(self, suffix: str) -> None:
            self.suffix = suffix

        def parse(self, text: str) -> str:
            return text.upper() + self.suffix

    parser = Upper("!")
    assert parser.max_retries == 0 and parser.parse("hi") == "HI!" and parser.name == "Upper"
    assert parser.reader() is None and parser.instructions() == ""
