"""Texts for error messages, logs and the terminal, written the same way everywhere: long ones
cut, control characters escaped, counts with their nouns."""

from __future__ import annotations

import re
import types
import typing
import unicodedata

# Control characters (and the Unicode line breaks, bidirectional marks and overrides, and
# zero-width characters) escaped, so a model's or a tool's text can neither break a line in
# two, restyle the terminal, nor hide or reorder what it says.
_ESCAPES: dict[int, str] = {
    code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if code != 0x09
}
_ESCAPES.update(
    {
        code: f"\\u{code:04x}"
        for code in (
            *(0x061C, 0x2028, 0x2029, 0xFEFF),
            *range(0x200B, 0x2010),
            *range(0x202A, 0x202F),
            *range(0x2060, 0x2065),
            *range(0x2066, 0x206A),
            *range(0xD800, 0xE000),  # lone surrogates: no terminal or file can write one
        )
    }
)
# Searched for before any is escaped: translate() looks up every character, far slower.
_RARE_CONTROL = re.compile(
    "[" + "".join(chr(code) for code in _ESCAPES if code not in (10, 13)) + "]"
)
_ESCAPES.update({ord("\\"): "\\\\", ord("\n"): "\\n", ord("\r"): "\\r"})


def shorten(text: str, limit: int) -> str:
    """`text`, or its first `limit - 1` characters and an ellipsis when it is longer."""
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def described(value: object) -> str:
    """A value as an error message shows what was given: its type and its (shortened) repr."""
    return f"{type(value).__name__} {short_repr(value, 80)}"


def short_repr(value: object, limit: int) -> str:
    """`repr(value)` shortened to `limit` characters; a placeholder for a value nested too
    deeply for repr."""
    try:
        text = repr(value)
    except RecursionError:
        return f"<{type(value).__name__} nested too deeply to show>"
    return shorten(text, limit)


def type_text(annotation: object) -> str:
    """A type as code writes it, without module paths: `list[Item]`, `Literal['a', 'b']`,
    `Item | None`."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is None or not args:
        name = getattr(annotation, "__name__", None)
        return name if isinstance(name, str) else repr(annotation)
    if origin is typing.Literal:
        return f"Literal[{', '.join(map(repr, args))}]"
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(map(type_text, args))
    return f"{type_text(origin)}[{', '.join(map(type_text, args))}]"


def quoted(text: str, limit: int) -> str:
    """`text` shortened to `limit` characters, as a Python string literal."""
    return repr(shorten(text, limit))


def counted(number: int, noun: str) -> str:
    """`number` `noun`s, in the singular for one: "1 run", "2 runs", "1,200 replies"."""
    if number == 1:
        return f"1 {noun}"
    plural = f"{noun[:-1]}ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else f"{noun}s"
    return f"{number:,} {plural}"


def one_line(text: str, limit: int) -> str:
    """`text` with line breaks escaped, and cut in the middle when longer than `limit`: the
    start and the end of a prompt or an output are what tell one from another."""
    if limit and len(text) > limit:
        head = limit - limit // 2
        cut = len(text) - limit
        text = f"{text[:head]}…[{counted(cut, 'character')} cut]…{text[len(text) - limit // 2 :]}"
    escaped = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    if _RARE_CONTROL.search(escaped) is None:
        return escaped
    return text.translate(_ESCAPES)


# What a browser would not show, or would use to reorder the text around it.
_INVISIBLE_CATEGORIES = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))


def visible(text: str) -> str:
    """`text` with each character a reader would not see, or that would reorder the text
    around it (controls, bidirectional marks and overrides, zero-width characters, lone
    surrogates, unassigned code points), written as its escape: `\\u202e`, `\\u{e0001}`."""
    return "".join(
        _escape(char) if unicodedata.category(char) in _INVISIBLE_CATEGORIES else char
        for char in text
    )


def visible_json(text: str) -> str:
    """JSON text, as `json.dumps` writes it, with each character `visible` escapes written as
    a JSON escape instead (a surrogate pair beyond U+FFFF), so it still reads back as the same
    value. Its line breaks stay: `json.dumps` writes them only between values."""
    return "".join(
        _json_escape(char)
        if char != "\n" and unicodedata.category(char) in _INVISIBLE_CATEGORIES
        else char
        for char in text
    )


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return _escape(char)
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\u{{{code:x}}}"
