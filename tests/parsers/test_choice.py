"""parsers.ChoiceParser: one of an Enum's members, a Literal's values or strings."""

from __future__ import annotations

import enum
from typing import Literal

import pytest

from chainkit import parsers
from chainkit.parsers.errors import ParserConfigError, ParserTypeError


class Mood(enum.Enum):
    HAPPY = "happy"
    SAD = "sad"


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


def test_an_enum_member_is_read_by_value_or_name_in_any_case() -> None:
    parser = parsers.ChoiceParser(Mood)
    assert parser.parse("happy") is Mood.HAPPY
    assert parser.parse("**Sad.**") is Mood.SAD
    assert parser.parse("HAPPY") is Mood.HAPPY
    assert parsers.ChoiceParser(Level).parse("high") is Level.HIGH
    assert parsers.ChoiceParser(Level).parse(" 1 ") is Level.LOW
    assert parser.output_type is Mood


def test_a_literal_gives_its_value_and_strings_their_own_spelling() -> None:
    assert parsers.ChoiceParser(Literal["yes", "no", 3]).parse("3") == 3
    strings = parsers.ChoiceParser(["Positive", "Negative"])
    assert strings.parse("positive") == "Positive"
    assert strings.output_type == Literal["Positive", "Negative"]


def test_an_exact_match_wins_over_one_in_another_case() -> None:
    parser = parsers.ChoiceParser(["a", "A"])
    assert parser.parse("A") == "A" and parser.parse("a") == "a"


def test_anything_else_is_refused_naming_every_choice() -> None:
    with pytest.raises(parsers.ParseError) as raised:
        parsers.ChoiceParser(Mood).parse("The answer is happy")
    assert str(raised.value) == (
        "ChoiceParser expected one of 'happy', 'sad', got 'The answer is happy'"
    )
    assert raised.value.expected == "one of 'happy', 'sad'"


def test_many_choices_are_named_up_to_twenty() -> None:
    parser = parsers.ChoiceParser([f"c{n}" for n in range(50)])
    with pytest.raises(parsers.ParseError, match=r"'c19' \(and 30 more\), got 'x'"):
        parser.parse("x")


@pytest.mark.parametrize(
    ("choices", "error", "message"),
    [
        ("abc", ParserTypeError, "an Enum class, a Literal\\[...\\] or a list of strings, got str"),
        (["a", 1], ParserTypeError, "choices must be strings, got int 1"),
        ([], ParserConfigError, "at least one choice"),
        (["a", "  "], ParserConfigError, "must not be blank"),
    ],
)
def test_wrong_choices_are_refused_when_built(choices: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        parsers.ChoiceParser(choices)


def test_instructions_name_the_choices() -> None:
    assert parsers.ChoiceParser(Mood).instructions() == (
        "Answer with one of 'happy', 'sad', and nothing else."
    )
