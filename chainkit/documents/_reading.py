"""Reading a text file safely: its encoding (a byte order mark names it, else the one given,
else UTF-8), binary data told apart by a NUL byte (git's rule), a size checked before
anything is read, and lines read one at a time with a bound on each, so a huge file or a
huge line is never held whole. A byte that does not decode is named by its line."""

from __future__ import annotations

import codecs
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from chainkit.documents.errors import (
    BinaryFileError,
    DocumentValueError,
    FileTooLargeError,
    LoadError,
)

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""The largest file a loader reads whole (text, Markdown, HTML); CSV and JSONL stream."""
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line a streaming loader reads (one CSV row's line, one JSON value)."""
_SNIFF_BYTES = 8000
"""The bytes of a whole file looked at for a NUL, as git does (a streamed file's lines are
each looked at whole)."""
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def encoding_of(head: bytes, encoding: str | None) -> tuple[str, bool]:
    """(the encoding to read a file that starts with `head` in, whether a byte order mark
    named it)."""
    for bom, named in _BOMS:
        if head.startswith(bom):
            return named, True
    return encoding or "utf-8", False


def check_encoding(encoding: str | None) -> None:
    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise DocumentValueError(f"unknown encoding {encoding!r}") from None


def read_text(path: Path, encoding: str | None, max_bytes: int) -> str:
    """The whole text of `path`, refused unread when larger than `max_bytes`."""
    size = regular_file_size(path)
    if size > max_bytes:
        raise FileTooLargeError(
            path, f"{size:,} bytes is more than max_bytes={max_bytes:,}; it is not read"
        )
    try:
        with path.open("rb") as file:
            data = file.read(max_bytes + 1)  # a file may grow after its size was read
    except OSError as error:
        raise LoadError(path, f"cannot be read: {error.strerror or error}") from error
    if len(data) > max_bytes:
        raise FileTooLargeError(path, f"grew past max_bytes={max_bytes:,} as it was read")
    chosen, marked = encoding_of(data[:_SNIFF_BYTES], encoding)
    if not marked and b"\0" in data[:_SNIFF_BYTES]:
        raise BinaryFileError(path, "holds binary data (a NUL byte), not text")
    try:
        return data.decode(chosen)
    except UnicodeDecodeError as error:
        raise _undecodable(path, data, error, chosen) from None


def lines(path: Path, encoding: str | None, max_line_bytes: int) -> Iterator[tuple[int, str]]:
    """(number, text) of each line of `path`, read one at a time."""
    regular_file_size(path)
    try:
        stream = path.open("rb")
    except OSError as error:
        raise LoadError(path, f"cannot be read: {error.strerror or error}") from error
    with stream:
        chosen, marked = encoding_of(stream.peek(_SNIFF_BYTES)[:_SNIFF_BYTES], encoding)
        if codecs.lookup(chosen).name.startswith(("utf-16", "utf-32")):
            yield from _wide_lines(path, stream, chosen, max_line_bytes)
            return
        if marked and chosen == "utf-8-sig":
            stream.read(len(codecs.BOM_UTF8))
            chosen = "utf-8"
        number = 0
        while raw := stream.readline(max_line_bytes + 1):
            number += 1
            if len(raw) > max_line_bytes:
                raise FileTooLargeError(
                    path, f"a line longer than max_line_bytes={max_line_bytes:,}", line=number
                )
            if b"\0" in raw:
                raise BinaryFileError(path, "holds binary data (a NUL byte)", line=number)
            try:
                yield number, raw.decode(chosen)
            except UnicodeDecodeError as error:
                raise LoadError(
                    path,
                    f"byte {error.start + 1} of the line is not {chosen}: {error.reason}; "
                    "name the file's encoding with encoding=",
                    line=number,
                ) from None


def _wide_lines(
    path: Path, stream: io.BufferedReader, encoding: str, max_line_bytes: int
) -> Iterator[tuple[int, str]]:
    """Lines of a UTF-16 or UTF-32 file (marked by its byte order mark), decoded as a stream."""
    text = io.TextIOWrapper(stream, encoding=encoding, newline="")
    number = 0
    try:
        while line := text.readline(max_line_bytes + 1):
            number += 1
            if len(line) > max_line_bytes:
                raise FileTooLargeError(
                    path, f"a line longer than max_line_bytes={max_line_bytes:,}", line=number
                )
            yield number, line
    except UnicodeDecodeError as error:
        raise LoadError(path, f"is not {encoding}: {error.reason}", line=number + 1) from None
    finally:
        text.detach()


def regular_file_size(path: Path) -> int:
    """The size of the file at `path`; LoadError when it cannot be read, or is no regular
    file: reading a pipe waits for a writer, and a device such as /dev/zero never ends."""
    try:
        status = os.stat(path)
    except OSError as error:
        raise LoadError(path, f"cannot be read: {error.strerror or error}") from error
    if not stat.S_ISREG(status.st_mode):
        kind = "a folder" if stat.S_ISDIR(status.st_mode) else "a pipe, device or socket"
        raise LoadError(path, f"is not a regular file but {kind}; it is not read")
    return status.st_size


def _undecodable(path: Path, data: bytes, error: UnicodeDecodeError, encoding: str) -> LoadError:
    line_start = data.rfind(b"\n", 0, error.start) + 1
    return LoadError(
        path,
        f"byte {error.start - line_start + 1} of the line is not {encoding}: {error.reason}; "
        "name the file's encoding with encoding=",
        line=data.count(b"\n", 0, error.start) + 1,
    )
