"""Errors of documents: a file a loader could not read (naming the file, and the line, row or
page where it could tell), an optional extractor not installed, and a splitter or document
built with settings it cannot take."""

from __future__ import annotations

from pathlib import Path

from chainkit._errors import ChainkitError


class LoadError(ChainkitError, ValueError):
    """A loader could not read a file, or a part of it: `path` is the file, `line` the line
    (of a text, CSV or JSONL file) or `page` the PDF page where it could tell, and `reason`
    (and the message) what was wrong."""

    def __init__(
        self, path: str | Path, reason: str, *, line: int | None = None, page: int | None = None
    ) -> None:
        self.path = str(path)
        self.line = line
        self.page = page
        self.reason = reason
        where = self.path
        if line is not None:
            where += f", line {line}"
        if page is not None:
            where += f", page {page}"
        super().__init__(f"{where}: {reason}")


class BinaryFileError(LoadError):
    """A file a text loader was given holds binary data (a NUL byte), not text."""


class FileTooLargeError(LoadError):
    """A file (or one line of it) is larger than the loader's `max_bytes` (`max_line_bytes`):
    refused before it is read whole."""


class ExtraMissingError(ChainkitError, ModuleNotFoundError):
    """A loader needs an optional package that is not installed: `pip install
    'chainkit[html]'` for trafilatura, `pip install 'chainkit[pdf]'` for pypdf."""


class DocumentValueError(ChainkitError, ValueError):
    """A document, loader or splitter was given a value it cannot take: a chunk size below 1,
    an overlap not below the chunk size, a column that is not in the file."""


class DocumentTypeError(ChainkitError, TypeError):
    """A document, loader or splitter was given a value of the wrong type: text that is not a
    string, metadata that is not a mapping of string keys."""
