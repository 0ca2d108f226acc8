"""parsers.TextParser: the reply's text as it is; streamed, the text so far."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainkit import parsers
from chainkit.parsers.errors import ParserTypeError
from tests.parsers.streaming import CUTS, by_character, partials, pieces


def test_the_text_comes_back_unchanged() -> None:
    parser = parsers.TextParser()
    assert parser.parse("  Paris\n") == "  Paris\n"
    assert parser.parse("") == ""
    assert parser.output_type is str
    assert parser.max_retries == 0 and parser.name == "TextParser"
    assert parser.instructions() == ""


def test_streamed_each_partial_is_the_text_so_far() -> None:
    assert partials(parsers.TextParser(), by_character("héllo")) == [
        "h",
        "hé",
        "hél",
        "héll",
        "héllo",
    ]
    assert partials(parsers.TextParser(), ["a", "", "b"]) == ["a", "ab"]


@given(st.text(), CUTS)
def test_any_cutting_ends_with_the_parsed_text(text: str, cuts: list[int]) -> None:
    found = partials(parsers.TextParser(), pieces(text, cuts))
    assert found == [text[: len(value)] for value in found]
    assert (found[-1] if found else "") == parsers.TextParser().parse(text)


def test_a_long_text_is_copied_a_bounded_number_of_times_per_character() -> None:
    # Handing on the whole text at each of a million small chunks would copy ~10^12 characters.
    # Past a small size, the text is handed on once the characters since pay for the copy: the
    # last partial value may lag behind (the whole text is what parse gives).
    text = "ab" * 500_000
    found = partials(parsers.TextParser(), ["ab"] * 500_000)
    assert text.startswith(found[-1]) and len(found[-1]) > 0.9 * len(text)
    assert sum(map(len, found)) <= 40 * len(text)


def test_text_that_is_no_str_is_refused_naming_the_parser() -> None:
    with pytest.raises(ParserTypeError, match=r"TextParser.parse reads a str, got bytes b'hi'"):
        parsers.TextParser().parse(b"hi")  # type: ignore[arg-type]


@pytest.mark.parametrize("retries", [-1, 1.5, True, "2"])
def test_max_retries_must_be_a_whole_number_of_zero_or_more(retries: object) -> None:
    with pytest.raises((ParserTypeError, parsers.errors.ParserConfigError), match="max_retries"):
        parsers.TextParser(max_retries=retries)  # type: ignore[arg-type]


def test_langchains_get_format_instructions_points_to_instructions() -> None:
    with pytest.raises(
        parsers.errors.ParserAttributeError,
        match=r"TextParser has no get_format_instructions method .*: use parser.instructions\(\)",
    ):
        parsers.TextParser().get_format_instructions()  # type: ignore[attr-defined]
