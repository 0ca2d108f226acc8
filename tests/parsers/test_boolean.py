"""parsers.BooleanParser: yes or no, in a few languages, or in words of your own."""

from __future__ import annotations

import pytest

from chainkit import parsers
from chainkit.parsers.errors import ParserConfigError, ParserTypeError


@pytest.mark.parametrize(
    "text",
    [
        "yes",
        "Yes.",
        "**YES**",
        " `true` ",
        "Yes, it is.",
        "oui",
        "Ja!",
        "sí",
        "да",
        "是",
        "是的。",
        "はい",
    ],
)
def test_yes_in_its_forms_is_true(text: str) -> None:
    assert parsers.BooleanParser().parse(text) is True


@pytest.mark.parametrize(
    "text",
    ["no", "No.", "FALSE", "No, it is not", "non", "nein", "não", "нет", "否", "不是", "いいえ"],
)
def test_no_in_its_forms_is_false(text: str) -> None:
    assert parsers.BooleanParser().parse(text) is False


@pytest.mark.parametrize("text", ["maybe", "", "nope", "yesterday", "Not sure", "n/a" * 10_000])
def test_anything_else_is_refused_naming_yes_or_no(text: str) -> None:
    with pytest.raises(
        parsers.ParseError, match=r"^BooleanParser expected yes or no, got "
    ) as raised:
        parsers.BooleanParser().parse(text)
    assert raised.value.text == text and len(str(raised.value)) < 200


def test_words_of_your_own_replace_the_defaults() -> None:
    parser = parsers.BooleanParser({"Approve": True, "reject": False})
    assert parser.parse("APPROVE.") is True and parser.parse("reject") is False
    with pytest.raises(parsers.ParseError, match="expected approve or reject, got 'yes'"):
        parser.parse("yes")
    assert parser.instructions() == "Answer with approve or reject, and nothing else."


@pytest.mark.parametrize(
    ("words", "error", "message"),
    [
        (["yes"], ParserTypeError, "words must map words to True or False, got list"),
        ({"yes": 1}, ParserTypeError, "got str 'yes': int 1"),
        ({" ": True, "no": False}, ParserTypeError, "non-empty words"),
        ({"yes": True}, ParserConfigError, "one word for True and one for False"),
    ],
)
def test_wrong_words_are_refused_when_built(words: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        parsers.BooleanParser(words)  # type: ignore[arg-type]


def test_a_yes_or_no_has_no_partial_values() -> None:
    assert parsers.BooleanParser().reader() is None
    assert parsers.BooleanParser().output_type is bool
