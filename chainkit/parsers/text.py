"""`TextParser`: the reply's text as it is (LangChain's StrOutputParser)."""

from __future__ import annotations

from typing import Any

from chainkit.parsers.base import CopyBudget, Parser, checked_text


class TextParser(Parser):
    """The reply's text, unchanged. Streamed, each partial value is the text so far."""

    output_type = str

    def parse(self, text: str) -> str:
        return checked_text(self, text)

    def reader(self) -> TextReader:
        return TextReader()


class TextReader:
    """The text so far, handed on as it grows (a long text not at every chunk: see
    `CopyBudget`)."""

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._length = 0
        self._budget = CopyBudget()

    def feed(self, chunk: str) -> list[Any]:
        if not chunk:
            return []
        self._pieces.append(chunk)
        self._length += len(chunk)
        self._budget.read(len(chunk))
        if not self._budget.due(self._length):
            return []
        self._budget.spent()
        self._pieces = ["".join(self._pieces)]
        return [self._pieces[0]]
