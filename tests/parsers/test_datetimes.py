"""parsers.DatetimeParser: ISO 8601, or a strptime format of your own."""

from __future__ import annotations

import datetime

import pytest

from chainkit import parsers
from chainkit.parsers.errors import ParserConfigError, ParserTypeError

UTC = datetime.UTC


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T13:45:30", datetime.datetime(2024, 5, 1, 13, 45, 30)),
        ("`2024-05-01 13:45`.", datetime.datetime(2024, 5, 1, 13, 45)),
        ("2024-05-01T13:45:30Z", datetime.datetime(2024, 5, 1, 13, 45, 30, tzinfo=UTC)),
        ("2024-05-01", datetime.datetime(2024, 5, 1)),
    ],
)
def test_iso_8601_is_read(text: str, expected: datetime.datetime) -> None:
    assert parsers.DatetimeParser().parse(text) == expected


def test_a_format_of_your_own_is_read_and_shown_by_example() -> None:
    parser = parsers.DatetimeParser("%d/%m/%Y %H:%M")
    assert parser.parse("01/05/2024 13:45") == datetime.datetime(2024, 5, 1, 13, 45)
    with pytest.raises(parsers.ParseError) as raised:
        parser.parse("2024-05-01")
    assert str(raised.value) == (
        "DatetimeParser expected a date and time in the format '%d/%m/%Y %H:%M', such as "
        "01/05/2024 13:45, got '2024-05-01'"
    )
    assert "such as 01/05/2024 13:45" in parser.instructions()


@pytest.mark.parametrize("text", ["tomorrow", "", "2024-13-01", "2024-05-01" + " " * 200 + "x"])
def test_anything_else_is_refused_naming_iso_8601(text: str) -> None:
    with pytest.raises(parsers.ParseError, match="expected a date and time in ISO 8601, such as"):
        parsers.DatetimeParser().parse(text)


def test_a_huge_reply_is_refused_without_being_read() -> None:
    with pytest.raises(parsers.ParseError):
        parsers.DatetimeParser().parse("2024" * 1_000_000)


def test_a_wrong_format_is_refused_when_built() -> None:
    with pytest.raises(ParserTypeError, match="format must be a strptime format"):
        parsers.DatetimeParser(5)  # type: ignore[arg-type]
    with pytest.raises(ParserConfigError, match="has no directive"):
        parsers.DatetimeParser("YYYY-MM-DD")
    assert parsers.DatetimeParser().output_type is datetime.datetime
