"""Loaders of whole text files: plain text and Markdown, one document per file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from chainkit.documents._reading import DEFAULT_MAX_BYTES, check_encoding, read_text
from chainkit.documents.document import Document


def load_text(
    path: str | Path, *, encoding: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[Document]:
    """The text of the file at `path` as one document, its id and `source` the path.

    The encoding is the one its byte order mark names, else `encoding`, else UTF-8; a byte
    that does not decode raises LoadError naming the line. A file holding a NUL byte raises
    BinaryFileError, one larger than `max_bytes` FileTooLargeError before it is read. Lazy: the
    file is read when the first document is asked for."""
    check_encoding(encoding)
    return _load(Path(path), encoding, max_bytes, "text")


def load_markdown(
    path: str | Path, *, encoding: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[Document]:
    """The Markdown file at `path` as one document, as `load_text` reads it; its first
    top-level heading, if any, is the `title` in its metadata."""
    check_encoding(encoding)
    return _load(Path(path), encoding, max_bytes, "markdown")


def _load(path: Path, encoding: str | None, max_bytes: int, kind: str) -> Iterator[Document]:
    text = read_text(path, encoding, max_bytes)
    metadata: dict[str, object] = {"source": str(path), "format": kind}
    if kind == "markdown" and (title := _markdown_title(text)):
        metadata["title"] = title
    yield Document(text, metadata, id=str(path))


def _markdown_title(text: str) -> str | None:
    """The text of the first `# ` heading outside code fences, if any."""
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.startswith(("# ", "#\t")):
            return line[2:].strip().rstrip("#").strip() or None
    return None
