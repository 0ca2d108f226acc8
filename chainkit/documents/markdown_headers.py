"""Splitting Markdown at its headings, each heading's text kept in the metadata of the section
under it (`h1`, `h2`, …), so a chunk cut from a section later still says where it stood."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from chainkit.documents.document import Document
from chainkit.documents.errors import DocumentTypeError, DocumentValueError


class MarkdownHeaderSplitter:
    """Splits Markdown documents into a section per heading of depth `depth` or less (`#` to
    `######`; ATX headings, not those inside code fences). A section holds its heading line
    and what follows up to the next such heading; its metadata is the document's with the
    headings above it (`{"h1": "Guide", "h2": "Install"}`), `start` (its offset in the
    document's text) and `parent` (the document's id); it is named `parent@start`. Text
    before the first heading is a section of its own, with no heading."""

    def __init__(self, depth: int = 3) -> None:
        if isinstance(depth, bool) or not isinstance(depth, int):
            raise DocumentTypeError(f"depth must be an int, not {type(depth).__name__}")
        if not 1 <= depth <= 6:
            raise DocumentValueError(f"depth must be from 1 to 6, not {depth}")
        self.depth = depth

    def __repr__(self) -> str:
        return f"MarkdownHeaderSplitter(depth={self.depth})"

    def split(self, documents: Document | Iterable[Document]) -> Iterator[Document]:
        """The sections of each document, lazily, as the class says."""
        for document in [documents] if isinstance(documents, Document) else documents:
            if not isinstance(document, Document):
                raise DocumentTypeError(f"split takes Documents, not {type(document).__name__}")
            yield from self._sections(document)

    def _sections(self, document: Document) -> Iterator[Document]:
        text = document.text
        parent, offset = document.place()
        headings: dict[str, str] = {}
        section_start, section_headings = 0, dict(headings)
        for start, depth, title in self._headings(text):
            if text[section_start:start].strip():
                yield _section(
                    document, text, section_start, start, section_headings, offset, parent
                )
            for deeper in range(depth, 7):
                headings.pop(f"h{deeper}", None)
            headings[f"h{depth}"] = title
            section_start, section_headings = start, dict(headings)
        if text[section_start:].strip():
            yield _section(
                document, text, section_start, len(text), section_headings, offset, parent
            )

    def _headings(self, text: str) -> Iterator[tuple[int, int, str]]:
        """(offset, depth, title) of each heading of `text` the splitter cuts at."""
        fenced = False
        start = 0
        while start < len(text):
            end = text.find("\n", start)
            end = len(text) if end == -1 else end
            line = text[start:end]
            if line.lstrip(" ").startswith(("```", "~~~")):
                fenced = not fenced
            elif not fenced and (heading := _heading(line)) and heading[0] <= self.depth:
                yield start, *heading
            start = end + 1


def _heading(line: str) -> tuple[int, str] | None:
    """(depth, title) of an ATX heading line, else None."""
    depth = len(line) - len(line.lstrip("#"))
    if not 1 <= depth <= 6 or line[depth : depth + 1] not in (" ", "\t", ""):
        return None
    title = line[depth:].strip().rstrip("#").strip()
    return (depth, title) if title else None


def _section(
    document: Document,
    text: str,
    start: int,
    end: int,
    headings: dict[str, str],
    offset: int,
    parent: str,
) -> Document:
    at = offset + start
    metadata = {**document.metadata, **headings, "start": at, "parent": parent}
    return Document(text[start:end], metadata, id=f"{parent}@{at}")
