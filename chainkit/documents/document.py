"""The one document type: a text, its metadata, and an id that names where it came from.

A loader's document is named by its source and position (`notes.md`, `faq.csv#row=12`,
`paper.pdf#page=3`), and a chunk by its document and start offset (`notes.md@1200`), never by
its content: two equal paragraphs in two files stay two documents, each cited where it is, and
an edited file keeps its ids, so an index updates its rows rather than adding new ones beside
stale ones. What changed is told by `content_hash`, the SHA-256 of the text. A document made by
hand with no id is named by that hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from chainkit.documents.errors import DocumentTypeError


@dataclass(frozen=True, eq=True)
class Document:
    """A text with its metadata (a read-only mapping; `source` names the file it came from,
    `start` a chunk's offset in its document's text) and its id (see the module)."""

    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise DocumentTypeError(
                f"Document text must be a string, not {type(self.text).__name__}"
            )
        if not isinstance(self.metadata, Mapping) or not all(
            isinstance(key, str) for key in self.metadata
        ):
            raise DocumentTypeError("Document metadata must be a mapping with string keys")
        if not isinstance(self.id, str):
            raise DocumentTypeError(f"Document id must be a string, not {type(self.id).__name__}")
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))
        if not self.id:
            object.__setattr__(self, "id", self.content_hash)

    @property
    def content_hash(self) -> str:
        """The SHA-256 of the text, in hex: equal texts, equal hashes."""
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()

    def place(self) -> tuple[str, int]:
        """(the id of the document this one was cut from, this one's offset in its text): its
        `parent` and `start` when a splitter made it, else its own id and 0 (a `start` or
        `parent` of another type, say a CSV column of that name, is not a place)."""
        parent = self.metadata.get("parent")
        start = self.metadata.get("start")
        if isinstance(parent, str) and isinstance(start, int) and not isinstance(start, bool):
            return parent, start
        return self.id, 0

    def __hash__(self) -> int:
        return hash((self.id, self.text))

    def __repr__(self) -> str:
        shown = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        return f"Document(id={self.id!r}, text={shown!r}, metadata={dict(self.metadata)!r})"
