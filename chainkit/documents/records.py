"""Loaders of files of records, streamed a line at a time: CSV (a column as the text, the
others as metadata) and JSON Lines (a field as the text, the others as metadata)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from chainkit._text import counted
from chainkit.documents._reading import (
    DEFAULT_MAX_LINE_BYTES,
    check_encoding,
    lines,
)
from chainkit.documents.document import Document
from chainkit.documents.errors import DocumentTypeError, LoadError


def load_csv(
    path: str | Path,
    text_column: str,
    *,
    metadata_columns: Sequence[str] | None = None,
    delimiter: str = ",",
    encoding: str | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[Document]:
    """A document per row of the CSV file at `path` (its first row names the columns): the
    text is `text_column`'s value, the metadata the other columns (or `metadata_columns`
    only) with `source` and `row` (counted from 1, after the header). Its id is
    `path#row=N`. Rows are read one at a time; a row that cannot be read raises LoadError
    naming the line where that was found (a quoted field may span lines)."""
    check_encoding(encoding)
    if not isinstance(text_column, str):
        raise DocumentTypeError("text_column must be a column's name (a string)")
    wanted = None if metadata_columns is None else tuple(metadata_columns)
    return _csv(Path(path), text_column, wanted, delimiter, encoding, max_line_bytes)


def load_jsonl(
    path: str | Path,
    text_field: str,
    *,
    metadata_fields: Sequence[str] | None = None,
    encoding: str | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[Document]:
    """A document per line of the JSON Lines file at `path` (each a JSON object; blank lines
    are passed by): the text is `text_field`'s value, the metadata the other fields (or
    `metadata_fields` only) with `source` and `line`. Its id is `path#line=N`. A line that is
    not an object holding `text_field` as a string raises LoadError naming the line."""
    check_encoding(encoding)
    if not isinstance(text_field, str):
        raise DocumentTypeError("text_field must be a field's name (a string)")
    wanted = None if metadata_fields is None else tuple(metadata_fields)
    return _jsonl(Path(path), text_field, wanted, encoding, max_line_bytes)


def _csv(
    path: Path,
    text_column: str,
    wanted: tuple[str, ...] | None,
    delimiter: str,
    encoding: str | None,
    max_line_bytes: int,
) -> Iterator[Document]:
    numbered = lines(path, encoding, max_line_bytes)
    line_of = [0]

    def texts() -> Iterator[str]:
        for number, text in numbered:
            line_of[0] = number
            yield text

    # A row's field may span lines: the limit on one line does not bound it, csv's own
    # field size limit does (131,072 characters unless the caller's process raised it).
    reader = csv.reader(texts(), delimiter=delimiter)
    try:
        header = next(reader, None)
        if header is None:
            return
        if text_column not in header:
            raise LoadError(path, f"has no column {text_column!r}; its columns: {header}", line=1)
        index = header.index(text_column)
        for row_number, row in enumerate(reader, start=1):
            if not row:
                continue
            if len(row) != len(header):
                raise LoadError(
                    path,
                    f"has {counted(len(row), 'field')} where the header has {len(header)}",
                    line=line_of[0],
                )
            fields = dict(zip(header, row, strict=True))
            metadata = _chosen(fields, text_column, wanted)
            metadata.update(source=str(path), row=row_number)
            yield Document(row[index], metadata, id=f"{path}#row={row_number}")
    except csv.Error as error:
        raise LoadError(path, f"is not CSV here: {error}", line=line_of[0]) from None


def _jsonl(
    path: Path,
    text_field: str,
    wanted: tuple[str, ...] | None,
    encoding: str | None,
    max_line_bytes: int,
) -> Iterator[Document]:
    for number, line in lines(path, encoding, max_line_bytes):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError) as error:
            raise LoadError(path, f"is not JSON: {error}", line=number) from None
        if not isinstance(value, dict):
            raise LoadError(path, f"holds a {type(value).__name__}, not an object", line=number)
        text = value.get(text_field)
        if not isinstance(text, str):
            reason = (
                f"has no field {text_field!r}"
                if text is None
                else f"its {text_field!r} is a {type(text).__name__}, not a string"
            )
            raise LoadError(path, reason, line=number)
        metadata = _chosen(value, text_field, wanted)
        metadata.update(source=str(path), line=number)
        yield Document(text, metadata, id=f"{path}#line={number}")


def _chosen(
    fields: dict[str, Any], text_key: str, wanted: tuple[str, ...] | None
) -> dict[str, Any]:
    if wanted is None:
        return {key: value for key, value in fields.items() if key != text_key}
    return {key: fields[key] for key in wanted if key in fields}
