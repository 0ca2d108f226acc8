"""JSON as models write it: found inside a reply, read tolerantly, and read while it streams.

`find_object` takes the first JSON object in a reply: inside a ``` fence if there is one,
after any leading prose, with trailing commas allowed and whatever follows ignored.
`partial_object` reads an object cut off anywhere into the best value it holds so far: the
members complete or partly there (a string cut short as far as it goes), none that has only
its key. One hand-written parser does both, in linear time (no regex), nesting bounded.
"""

from __future__ import annotations

import json
from typing import Final

from chainkit._errors import ChainkitError

_MAX_DEPTH: Final = 200
_MAX_STARTS: Final = 16
"""How many `{` a reply's prose may hold before its object: each is tried in turn."""
_ESCAPES: Final = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_LITERALS: Final = {"true": True, "false": False, "null": None}
_NUMBER_CHARS: Final = frozenset("+-0123456789.eE")
_FENCE: Final = "```"


class JSONTextError(ChainkitError, ValueError):
    """Text holds no readable JSON object; the message says where reading failed. Always
    caught inside chainkit: it becomes a problem the model hears about."""


class _EndOfText(Exception):
    """The text ended inside a value (only raised when reading a whole object)."""


class _Reader:
    """Reads one JSON value from `text` at `at`. With `partial`, the end of the text ends
    every open value instead of being an error."""

    def __init__(self, text: str, at: int, *, partial: bool) -> None:
        self.text = text
        self.at = at
        self.partial = partial
        self.ended = False

    def fail(self, what: str) -> JSONTextError:
        around = self.text[max(self.at - 20, 0) : self.at + 20]
        return JSONTextError(f"{what} at character {self.at} (near {around!r})")

    def skip_space(self) -> None:
        text, at = self.text, self.at
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
        self.at = at

    def peek(self) -> str:
        self.skip_space()
        if self.at >= len(self.text):
            self.ended = True
            if not self.partial:
                raise _EndOfText
            return ""
        return self.text[self.at]

    def read_value(self, depth: int) -> object:
        if depth > _MAX_DEPTH:
            raise self.fail("JSON nested too deep")
        char = self.peek()
        if char == "{":
            return self.read_object(depth)
        if char == "[":
            return self.read_array(depth)
        if char == '"':
            return self.read_string()
        if char in _NUMBER_CHARS:
            return self.read_number()
        if char.isalpha():
            return self.read_literal()
        if self.ended:
            return None
        raise self.fail(f"unexpected {char!r}")

    def read_object(self, depth: int) -> dict[str, object]:
        result: dict[str, object] = {}
        self.at += 1
        while True:
            char = self.peek()
            if char == "}":
                self.at += 1
                return result
            if self.ended:
                return result
            if char != '"':
                raise self.fail("expected a key in quotes")
            key = self.read_string()
            if self.ended or self.peek() != ":":
                if self.ended:
                    return result
                raise self.fail("expected ':'")
            self.at += 1
            item = self.read_value(depth + 1)
            if self.ended:
                if item is not None:
                    result[key] = item
                return result
            result[key] = item
            if not self.separator("}"):
                return result

    def read_array(self, depth: int) -> list[object]:
        result: list[object] = []
        self.at += 1
        while True:
            char = self.peek()
            if char == "]":
                self.at += 1
                return result
            if self.ended:
                return result
            item = self.read_value(depth + 1)
            if self.ended:
                if item is not None:
                    result.append(item)
                return result
            result.append(item)
            if not self.separator("]"):
                return result

    def separator(self, closer: str) -> bool:
        """Reads the ',' after a member (a trailing one before `closer` is allowed); False
        when the text ended there."""
        char = self.peek()
        if self.ended:
            return False
        if char == closer:
            return True
        if char != ",":
            raise self.fail(f"expected ',' or {closer!r}")
        self.at += 1
        return True

    def read_string(self) -> str:
        text = self.text
        pieces: list[str] = []
        at = self.at + 1
        start = at
        while at < len(text):
            char = text[at]
            if char == '"':
                pieces.append(text[start:at])
                self.at = at + 1
                return "".join(pieces)
            if char == "\\":
                pieces.append(text[start:at])
                escaped, at = self.escape(at)
                pieces.append(escaped)
                start = at
                continue
            at += 1
        pieces.append(text[start:at])
        self.at = at
        self.ended = True
        if not self.partial:
            raise _EndOfText
        return "".join(pieces)

    def escape(self, at: int) -> tuple[str, int]:
        """The character an escape at `at` stands for, and where reading goes on."""
        code = self.text[at + 1 : at + 2]
        if code in _ESCAPES:
            return _ESCAPES[code], at + 2
        if code == "u":
            unit = _hex_unit(self.text, at + 2)
            if unit is not None:
                # A high surrogate and the low one after it stand for one character.
                low = _hex_unit(self.text, at + 8) if self.text[at + 6 : at + 8] == "\\u" else None
                if 0xD800 <= unit < 0xDC00 and low is not None and 0xDC00 <= low < 0xE000:
                    return chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)), at + 12
                return chr(unit), at + 6
        if at + 2 + (4 if code == "u" else 0) > len(self.text):
            return "", len(self.text)  # cut off inside the escape: the text ends here
        self.at = at
        raise self.fail("invalid escape")

    def read_number(self) -> object:
        text, start = self.text, self.at
        at = start
        while at < len(text) and text[at] in _NUMBER_CHARS:
            at += 1
        self.at = at
        try:
            return json.loads(text[start:at])
        except ValueError:
            if at >= len(text):  # cut off: "1." or "-" so far
                self.ended = True
                if not self.partial:
                    raise _EndOfText from None
                return None
            raise self.fail("invalid number") from None

    def read_literal(self) -> object:
        text, start = self.text, self.at
        at = start
        while at < len(text) and text[at].isalpha():
            at += 1
        word = text[start:at]
        self.at = at
        if word in _LITERALS:
            return _LITERALS[word]
        if at >= len(text) and any(name.startswith(word) for name in _LITERALS):
            self.ended = True
            if not self.partial:
                raise _EndOfText
            return None
        raise self.fail(f"unexpected {word!r}")


def _hex_unit(text: str, at: int) -> int | None:
    """The UTF-16 code unit of the four hex digits at `at`, if there are four."""
    digits = text[at : at + 4]
    if len(digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in digits):
        return int(digits, 16)
    return None


def _fenced(text: str) -> str:
    """The inside of the first ``` fence (its language tag dropped), else `text`."""
    opened = text.find(_FENCE)
    if opened < 0:
        return text
    line_end = text.find("\n", opened)
    if line_end < 0:
        return text
    closed = text.find(_FENCE, line_end)
    return text[line_end + 1 : closed if closed >= 0 else len(text)]


def find_object(text: str) -> object:
    """The first JSON object in a model's reply, read tolerantly; JSONTextError if none."""
    body = _fenced(text)
    start = body.find("{")
    if start < 0:
        raise JSONTextError("no JSON object in the reply (it has no '{')")
    first_error: JSONTextError | None = None
    for _ in range(_MAX_STARTS):
        reader = _Reader(body, start, partial=False)
        try:
            return reader.read_object(0)
        except _EndOfText:
            error = JSONTextError("the JSON object is cut off: the reply ends inside it")
        except JSONTextError as failed:
            error = failed
        first_error = first_error or error
        start = body.find("{", start + 1)
        if start < 0:
            break
    raise first_error or JSONTextError("no JSON object in the reply")


def partial_object(text: str) -> dict[str, object] | None:
    """The best object the start of a streamed reply holds so far; None before its `{`, or
    when what came is no JSON."""
    body = _fenced(text)
    start = body.find("{")
    if start < 0:
        return None
    try:
        return _Reader(body, start, partial=True).read_object(0)
    except JSONTextError:
        return None
