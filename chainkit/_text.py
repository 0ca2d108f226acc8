"""Texts for error messages, logs and the terminal, written the same way everywhere: long ones
cut, control characters escaped, counts with their nouns."""

from __future__ import annotations

import re

# Control characters (and the Unicode line breaks and bidirectional overrides) escaped, so a
# model's or a tool's text can neither break a line in two nor restyle the terminal.
_ESCAPES: dict[int, str] = {
    code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if code != 0x09
}
_ESCAPES.update(
    {
        code: f"\\u{code:04x}"
        for code in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
    }
)
# Half of a surrogate pair (text decoded with "surrogateescape"): no stream can encode it.
_ESCAPES.update({code: f"\\u{code:04x}" for code in range(0xD800, 0xE000)})
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
    return f"{type(value).__name__} {shorten(repr(value), 80)}"


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
        text = f"{text[:head]}…[{cut:,} characters cut]…{text[len(text) - limit // 2 :]}"
    escaped = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    if _RARE_CONTROL.search(escaped) is None:
        return escaped
    return text.translate(_ESCAPES)
