"""JSON as models write it: found inside a reply, read tolerantly, and read while it streams.

`ObjectStream` reads the first JSON object of a reply as its text arrives, each character
once: `partial()` is the best value it holds so far (the members complete or partly there, a
string cut short as far as it goes, none that has only its key), `whole()` the object once
the reply is complete. The object is the first one that reads: prose before it, ``` fences
around it (or around other text before it) and whatever follows are passed over; trailing
commas are allowed. `find_object` and `partial_object` read a whole text with it. Linear
time, no regex that backtracks, nesting bounded.
"""

from __future__ import annotations

import json
import re
from typing import Final

from chainkit._errors import ChainkitError
from chainkit._text import shorten

_MAX_DEPTH: Final = 200
_MAX_STARTS: Final = 16
"""How many `{` a reply's prose may hold before its object: each is tried in turn."""
_MAX_SHOWN_NUMBER: Final = 64
"""A number still arriving is shown while its text is at most this long (reading it costs
time in its length, each time a partial value is made)."""
_CHARS_PER_MEMBER: Final = 64
"""Copying this many characters of a string costs about what copying one member does."""
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
_LONGEST_LITERAL: Final = max(map(len, _LITERALS))
_NUMBER_CHARS: Final = frozenset("+-0123456789.eE")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_STRING_STOP: Final = re.compile(r'["\\]')
_SPACE: Final = frozenset(" \t\r\n")
_NOT_SPACE: Final = re.compile(r"[^ \t\r\n]")
_REPLACEMENT: Final = "\ufffd"
"""What a lone UTF-16 surrogate escape stands for: no valid text holds one."""


class JSONTextError(ChainkitError, ValueError):
    """Text holds no readable JSON object; the message says where reading failed. Always
    caught inside chainkit: it becomes a problem the model hears about."""


class _Absent:
    """A member not shown yet (a number cut at "1.", a literal cut at "tr")."""


_ABSENT: Final = _Absent()


class _Frame:
    """An open object or array: its finished members, and the key of the member arriving."""

    __slots__ = ("closer", "container", "expect", "key")

    def __init__(self, container: dict[str, object] | list[object], expect: str) -> None:
        self.container = container
        self.closer = "}" if isinstance(container, dict) else "]"
        self.expect = expect  # "key", "colon", "value", "value or end", "child", "comma"
        self.key: str | None = None

    def add(self, value: object) -> None:
        if isinstance(self.container, dict):
            assert self.key is not None
            self.container[self.key] = value
        else:
            self.container.append(value)
        self.key = None
        self.expect = "comma"

    def with_child(self, child: object) -> dict[str, object] | list[object]:
        """A copy of the container with `child` (the member still arriving) in its place."""
        copy = self.container.copy()
        if child is not _ABSENT:
            if isinstance(copy, dict):
                assert self.key is not None
                copy[self.key] = child
            else:
                copy.append(child)
        return copy


class _Scalar:
    """A string, number or literal still arriving; a key is a string that is shown only as
    its member's name."""

    __slots__ = ("is_key", "kind", "length", "pieces")

    def __init__(self, kind: str, *, is_key: bool = False) -> None:
        self.kind = kind  # "string", "number", "literal"
        self.is_key = is_key
        self.pieces: list[str] = []
        self.length = 0

    def add(self, piece: str) -> None:
        self.pieces.append(piece)
        self.length += len(piece)

    def text(self) -> str:
        if len(self.pieces) > 1:
            self.pieces = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""

    def shown(self) -> object:
        """What the value is so far, or _ABSENT when nothing of it can be shown."""
        if self.is_key or (self.kind != "string" and self.length > _MAX_SHOWN_NUMBER):
            return _ABSENT
        text = self.text()
        if self.kind == "string":
            return text
        if self.kind == "literal":
            return _LITERALS.get(text, _ABSENT)
        try:
            return json.loads(text)
        except ValueError:
            return _ABSENT


class ObjectStream:
    """The first JSON object of a reply, read as its text arrives (see the module).

    `chars_read` counts the characters the reader looked at, so a test can check that
    reading stays linear in the reply."""

    def __init__(self) -> None:
        self.chars_read = 0
        self.values_read = 0  # values begun: what a partial value built anew is made of
        self._chunks: list[str] = []
        self._length = 0  # of the text so far
        self._failures = 0
        self._start_at = -1  # where the object being read began
        self._first_error: JSONTextError | None = None
        self._given_up = False
        self._reset()

    def _reset(self) -> None:
        self._stack: list[_Frame] = []
        self._scalar: _Scalar | None = None
        self._pending = ""  # an escape cut off at the end of the text so far
        self._result: dict[str, object] | None = None

    @property
    def copy_cost(self) -> int:
        """What making a partial value costs, in members copied: the members of the open
        objects and arrays, and the string still arriving (joined anew each time)."""
        members = sum(len(frame.container) for frame in self._stack)
        scalar = self._scalar
        if scalar is None or scalar.kind != "string":
            return members
        return members + scalar.length // _CHARS_PER_MEMBER

    @property
    def complete(self) -> bool:
        """Whether the object has ended (its closing `}` was read)."""
        return self._result is not None

    def finished_items(self, key: str) -> list[object]:
        """The finished members so far of the array that is the object's `key` member."""
        if self._result is not None:
            found = self._result.get(key)
        elif len(self._stack) > 1 and self._stack[0].key == key:
            found = self._stack[1].container
        else:
            root = self._stack[0].container if self._stack else None
            found = root.get(key) if isinstance(root, dict) else None
        return found if isinstance(found, list) else []

    def feed(self, chunk: str) -> None:
        """Reads the next piece of the reply."""
        self._chunks.append(chunk)
        offset = self._length - len(self._pending)
        self._length += len(chunk)
        if self._result is not None or self._given_up:
            return
        text, self._pending = self._pending + chunk, ""
        try:
            self._read(text, 0, offset)
        except JSONTextError as error:
            self._recover(error)

    def _recover(self, error: JSONTextError) -> None:
        """After the object begun at `_start_at` failed (or was cut off): reads on from the
        next `{`, as prose may hold braces before the object."""
        whole = "".join(self._chunks)
        while True:
            self._first_error = self._first_error or error
            self._failures += 1
            start = whole.find("{", self._start_at + 1)
            self._reset()
            if self._failures >= _MAX_STARTS:
                self._given_up = True
                return
            if start < 0:
                return  # seek on in the text still to come
            try:
                self._read(whole, start, 0)
                return
            except JSONTextError as failed:
                error = failed

    def partial(self) -> dict[str, object] | None:
        """The best object the reply holds so far; None before its `{`, or when what came is
        no JSON."""
        if self._result is not None:
            return self._result
        if not self._stack:
            return None
        value: object = _ABSENT if self._scalar is None else self._scalar.shown()
        for frame in reversed(self._stack):
            value = frame.with_child(value)
        assert isinstance(value, dict)
        return value

    def whole(self) -> dict[str, object]:
        """The object of the complete reply; JSONTextError when it holds none."""
        while self._result is None:
            if self._given_up or not self._stack:
                raise self._first_error or JSONTextError(
                    "no JSON object in the reply (it has no '{')"
                )
            self._recover(JSONTextError("the JSON object is cut off: the reply ends inside it"))
        return self._result

    # Reading: `text` from `at` is what is new (with an escape held back from before);
    # `offset` is where `text` begins in the reply.

    def _read(self, text: str, at: int, offset: int) -> None:
        start, end = at, len(text)
        try:
            while at < end and self._result is None:
                if self._scalar is not None:
                    at = self._read_scalar(text, at, offset)
                elif not self._stack:
                    at = self._seek(text, at, offset)
                else:
                    at = self._read_structure(text, at, offset)
        finally:
            self.chars_read += at - start

    def _seek(self, text: str, at: int, offset: int) -> int:
        start = text.find("{", at)
        if start < 0:
            return len(text)
        self._start_at = offset + start
        self._stack.append(_Frame({}, "key"))
        return start + 1

    def _fail(self, what: str, text: str, at: int, offset: int) -> JSONTextError:
        around = text[max(at - 20, 0) : at + 20]
        return JSONTextError(f"{what} at character {offset + at} (near {around!r})")

    def _read_structure(self, text: str, at: int, offset: int) -> int:
        char = text[at]
        if char in _SPACE:
            found = _NOT_SPACE.search(text, at)
            if found is None:
                return len(text)
            at = found.start()
            char = text[at]
        frame = self._stack[-1]
        expect = frame.expect
        closer = frame.closer
        if expect == "comma":
            if char == ",":
                frame.expect = "key" if closer == "}" else "value or end"
            elif char == closer:
                self._close()
            else:
                raise self._fail(f"expected ',' or {closer!r}", text, at, offset)
            return at + 1
        if expect == "key":
            if char == "}":
                self._close()
            elif char == '"':
                self._scalar = _Scalar("string", is_key=True)
            else:
                raise self._fail("expected a key in quotes", text, at, offset)
            return at + 1
        if expect == "colon":
            if char != ":":
                raise self._fail("expected ':'", text, at, offset)
            frame.expect = "value"
            return at + 1
        if expect == "value or end" and char == "]":
            self._close()
            return at + 1
        return self._start_value(text, at, offset)

    def _start_value(self, text: str, at: int, offset: int) -> int:
        char = text[at]
        self.values_read += 1
        if char in "{[":
            if len(self._stack) > _MAX_DEPTH:
                raise self._fail("JSON nested too deep", text, at, offset)
            self._stack[-1].expect = "child"
            container: dict[str, object] | list[object] = {} if char == "{" else []
            self._stack.append(_Frame(container, "key" if char == "{" else "value or end"))
            return at + 1
        if char == '"':
            self._scalar = _Scalar("string")
            return at + 1
        if char in _NUMBER_CHARS:
            self._scalar = _Scalar("number")
            return at
        if char.isalpha():
            self._scalar = _Scalar("literal")
            return at
        raise self._fail(f"unexpected {char!r}", text, at, offset)

    def _close(self) -> None:
        finished = self._stack.pop().container
        if not self._stack:
            assert isinstance(finished, dict)
            self._result = finished
        else:
            self._stack[-1].add(finished)

    def _finish_scalar(self, value: object) -> None:
        scalar = self._scalar
        assert scalar is not None
        self._scalar = None
        frame = self._stack[-1]
        if scalar.is_key:
            assert isinstance(value, str)
            frame.key = value
            frame.expect = "colon"
        else:
            frame.add(value)

    def _read_scalar(self, text: str, at: int, offset: int) -> int:
        scalar = self._scalar
        assert scalar is not None
        if scalar.kind == "string":
            return self._read_string(scalar, text, at, offset)
        chars = _NUMBER_CHARS if scalar.kind == "number" else None
        end = at
        while end < len(text) and (text[end] in chars if chars else text[end].isalpha()):
            end += 1
        scalar.add(text[at:end])
        if end == len(text) and (chars is not None or _begins_literal(scalar)):
            return end
        word = scalar.text()
        if chars is None:
            if word not in _LITERALS:
                raise self._fail(f"unexpected {shorten(word, 20)!r}", text, at, offset)
            self._finish_scalar(_LITERALS[word])
            return end
        try:
            number = json.loads(word)
        except ValueError:
            raise self._fail("invalid number", text, at, offset) from None
        self._finish_scalar(number)
        return end

    def _read_string(self, scalar: _Scalar, text: str, at: int, offset: int) -> int:
        while True:
            stop = _STRING_STOP.search(text, at)
            if stop is None:
                scalar.add(text[at:])
                return len(text)
            where = stop.start()
            scalar.add(text[at:where])
            if text[where] == '"':
                self._finish_scalar(scalar.text())
                return where + 1
            escaped = self._escape(text, where, offset)
            if escaped is None:  # cut off inside the escape: wait for the rest
                self._pending = text[where:]
                return len(text)
            character, at = escaped
            scalar.add(character)

    def _escape(self, text: str, at: int, offset: int) -> tuple[str, int] | None:
        """The character the escape at `at` stands for and where reading goes on; None when
        the text ends before the escape does."""
        code = text[at + 1 : at + 2]
        if not code:
            return None
        if code in _ESCAPES:
            return _ESCAPES[code], at + 2
        if code != "u":
            raise self._fail("invalid escape", text, at, offset)
        unit = _hex_unit(text, at + 2)
        if unit is None:
            if _could_be_hex(text[at + 2 : at + 6]) and at + 6 > len(text):
                return None
            raise self._fail("invalid escape", text, at, offset)
        if 0xDC00 <= unit < 0xE000:
            return _REPLACEMENT, at + 6
        if not 0xD800 <= unit < 0xDC00:
            return chr(unit), at + 6
        # A high surrogate: its low half may follow as an escape of its own.
        after = text[at + 6 : at + 12]
        low = _hex_unit(text, at + 8) if after.startswith("\\u") else None
        if low is not None and 0xDC00 <= low < 0xE000:
            return chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)), at + 12
        if len(after) < 6 and "\\u".startswith(after[:2]) and _could_be_hex(after[2:]):
            return None
        return _REPLACEMENT, at + 6


def _begins_literal(scalar: _Scalar) -> bool:
    """Whether the word read so far may still become true, false or null."""
    if scalar.length > _LONGEST_LITERAL:
        return False
    word = scalar.text()
    return any(name.startswith(word) for name in _LITERALS)


def _hex_unit(text: str, at: int) -> int | None:
    """The UTF-16 code unit of the four hex digits at `at`, if there are four."""
    digits = text[at : at + 4]
    if len(digits) == 4 and _could_be_hex(digits):
        return int(digits, 16)
    return None


def _could_be_hex(digits: str) -> bool:
    return all(digit in _HEX for digit in digits)


def find_object(text: str) -> dict[str, object]:
    """The first JSON object in a model's reply, read tolerantly; JSONTextError if none."""
    strict = _only_object(text)
    if strict is not None:
        return strict
    stream = ObjectStream()
    stream.feed(text)
    return stream.whole()


def _only_object(text: str) -> dict[str, object] | None:
    """`text` read by the json module when it is one JSON object and nothing else, as most
    replies are (ten times faster than `ObjectStream` on a short one); None for any other
    text, and for those the two would read differently, left to `ObjectStream`: NaN and
    Infinity (which it refuses), `\\u` escapes (it reads a lone surrogate as U+FFFD) and
    more brackets than `_MAX_DEPTH` (it bounds the nesting)."""
    if "\\u" in text or text.count("{") + text.count("[") > _MAX_DEPTH:
        return None
    try:
        value = _STRICT.decode(text)
    except ValueError:  # not one JSON object alone: a number too long for int() too
        return None
    return value if type(value) is dict else None


def _refused(constant: str) -> object:
    raise ValueError(f"{constant} is no JSON")


_STRICT: Final = json.JSONDecoder(parse_constant=_refused)
"""`json.loads` without NaN and Infinity, made once (json.loads makes one at each call given
an option)."""


def partial_object(text: str) -> dict[str, object] | None:
    """The best object the start of a streamed reply holds so far; None before its `{`, or
    when what came is no JSON."""
    stream = ObjectStream()
    stream.feed(text)
    return stream.partial()
