"""`DatetimeParser`: a date and time, in ISO 8601 or in a format of your own."""

from __future__ import annotations

import datetime
from typing import Final

from chainkit._text import described
from chainkit.parsers._answer import bare
from chainkit.parsers.base import Parser, checked_text
from chainkit.parsers.errors import ParseError, ParserConfigError, ParserTypeError

_LONGEST: Final = 100
"""No date-time is written longer: a longer reply is refused without being read."""
_EXAMPLE: Final = datetime.datetime(2024, 5, 1, 13, 45, 30)


class DatetimeParser(Parser):
    """A `datetime.datetime` from the whole reply (quotes, backticks or a full stop around it
    taken off): in ISO 8601 (`2024-05-01T13:45:30`, `2024-05-01 13:45`, `...Z`, `+02:00`, a
    date alone as its midnight) by default, or in `format` (`datetime.strptime`'s, such as
    `"%d/%m/%Y %H:%M"`). A reply in another form raises `ParseError` naming the form."""

    output_type = datetime.datetime

    def __init__(self, format: str | None = None, *, max_retries: int = 0) -> None:
        super().__init__(max_retries=max_retries)
        if format is not None:
            if not isinstance(format, str):
                raise ParserTypeError(
                    f"DatetimeParser format must be a strptime format (str) or None, got "
                    f"{described(format)}"
                )
            if "%" not in format:
                raise ParserConfigError(
                    f"DatetimeParser format {format!r} has no directive (such as %Y-%m-%d)"
                )
        self.format = format
        self._example = _EXAMPLE.isoformat() if format is None else _example(format)

    def __repr__(self) -> str:
        return f"DatetimeParser({self.format!r})" if self.format else "DatetimeParser()"

    def parse(self, text: str) -> datetime.datetime:
        answer = bare(checked_text(self, text))
        if len(answer) <= _LONGEST:
            try:
                if self.format is None:
                    return datetime.datetime.fromisoformat(answer)
                return datetime.datetime.strptime(answer, self.format)
            except ValueError:
                pass
        raise ParseError(self.name, self._expected(), text)

    def instructions(self) -> str:
        return f"Answer with {self._expected()}, and nothing else."

    def _expected(self) -> str:
        form = "ISO 8601" if self.format is None else f"the format {self.format!r}"
        return f"a date and time in {form}, such as {self._example}"


def _example(format: str) -> str:
    try:
        return _EXAMPLE.strftime(format)
    except ValueError as error:
        raise ParserConfigError(f"DatetimeParser format {format!r} is no format: {error}") from None
