"""The parser contract: `Parser` reads a model's whole reply into a value, says what the value
is (`output_type`), what to tell the model (`instructions`), and may read a streamed reply
piece by piece (`reader`, a `PartialReader`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from chainkit._elsewhere import Elsewhere
from chainkit._pipe import Pipeable
from chainkit._text import described
from chainkit.parsers.errors import ParserAttributeError, ParserConfigError, ParserTypeError

_FREE_COPIES: Final = 1024
"""A partial value of at most this size (characters, or items) is handed on whenever it grows:
copying it costs less than the reading around it."""
_COPIES_PER_CHAR: Final = 16
"""A larger partial value is handed on once the characters read since the last one pay for
copying it, at this many units per character: the whole stream then costs time linear in the
reply."""


@runtime_checkable
class PartialReader(Protocol):
    """Reads a streamed reply as it arrives, each character once."""

    def feed(self, chunk: str) -> list[Any]:
        """The partial values `chunk` gave, oldest first (often none): each the value so far,
        never one equal to the last."""
        ...


class Parser(Pipeable, ABC):
    """Reads a model's reply (its text) into a value of `output_type`.

    `parse` reads the whole text and raises `parsers.ParseError` (a ValueError) naming what it
    expected and what it got. `reader()` gives a fresh `PartialReader` for a streamed reply,
    or None when partial values make no sense (a yes or no). `instructions()` is text for the
    prompt telling the model how to answer. `max_retries` is how many times a pipeline, or an
    `LLMChain`, sends a reply that did not parse back to the model with the error.
    """

    output_type: Any = Any
    """The type of a parsed value, for the checks made when steps are put together."""
    max_retries: int = 0
    """How many times a reply that does not parse is sent back to the model with the error
    (set by the constructor; 0 for a subclass that does not call it)."""

    if not TYPE_CHECKING:  # to mypy they stay missing, so it flags them in user code
        get_format_instructions = Elsewhere("use parser.instructions()", ParserAttributeError)

    def __init__(self, *, max_retries: int = 0) -> None:
        self.max_retries = checked_count(self, "max_retries", max_retries)

    @abstractmethod
    def parse(self, text: str) -> Any:
        """The value `text` (a whole reply) stands for; `ParseError` when it stands for none."""

    def reader(self) -> PartialReader | None:
        """A fresh reader of a streamed reply, or None when this parser gives no partial
        values."""
        return None

    def instructions(self) -> str:
        """What to tell the model about the form of its answer (put it in the prompt)."""
        return ""

    @property
    def name(self) -> str:
        """How runs and errors name the parser."""
        return type(self).__name__

    def __repr__(self) -> str:
        return f"{self.name}()"


def checked_text(parser: Parser, text: object) -> str:
    """`text`, once it is a str; ParserTypeError naming the parser when it is not."""
    if not isinstance(text, str):
        raise ParserTypeError(f"{parser.name}.parse reads a str, got {described(text)}")
    return text


def checked_count(parser: object, argument: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParserTypeError(
            f"{type(parser).__name__} {argument} must be a whole number, got {described(value)}"
        )
    if value < 0:
        raise ParserConfigError(
            f"{type(parser).__name__} {argument} must be 0 or more, got {value}"
        )
    return value


class CopyBudget:
    """Whether a growing partial value of some size is worth handing on now: always while it
    is small; once large, only when the characters read since the last one pay for the copy
    (see `_COPIES_PER_CHAR`)."""

    def __init__(self) -> None:
        self.unpaid = 0  # characters read since the last partial value was handed on

    def read(self, characters: int) -> None:
        self.unpaid += characters

    def due(self, size: int) -> bool:
        return size <= _FREE_COPIES or self.unpaid * _COPIES_PER_CHAR >= size

    def spent(self) -> None:
        self.unpaid = 0
