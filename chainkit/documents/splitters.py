"""Splitting documents into chunks of a bounded size, recursively by separators: a text too
long is cut at its paragraphs, then its lines, then its sentences (`. `, and `。！？` for
Chinese and Japanese, which have no spaces to cut at), then its clauses, its words, and only
last between any two characters; the pieces are then joined back into chunks up to the size,
each with up to `overlap` of the one before.

A chunk's `start` is its offset in its source's text, so `text[start:start + len(chunk)]` is
the chunk. Each piece is measured once and each chunk at most a few times, so the cost is
linear in the text (a 10 MB text splits in seconds; bench/bench_splitters.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal

from chainkit._tokens import CHARACTERS_PER_TOKEN
from chainkit.documents.document import Document
from chainkit.documents.errors import DocumentTypeError, DocumentValueError

Length = Literal["characters", "tokens"] | Callable[[str], int]
"""How a chunk's size is measured: in characters; in tokens by the project's estimate (a
quarter of the characters); or by a function, such as a model's tokenizer's count."""

_SENTENCE_ENDS = r"。|！|？|\. |! |\? "
_CLAUSE_ENDS = r"、|，|；|, |; "
_PROSE = (r"\n\n", r"\n", _SENTENCE_ENDS, _CLAUSE_ENDS, " ")
_MARKDOWN = (
    # A heading after a blank line, as headings are written (a `#` comment in a code block
    # seldom follows one).
    *(rf"\n\n(?={'#' * depth} )" for depth in range(1, 7)),
    r"\n(?=```)",
    *_PROSE,
)
_PYTHON = (
    r"\n(?=class |def |async def |@)",
    r"\n(?=    def |    async def |    @)",
    *_PROSE,
)


class RecursiveSplitter:
    """Splits texts into chunks of at most `chunk_size` (in the unit of `length`), each
    starting with up to `overlap` of the text before it, as the module says.

    `separators` are the strings cut at, coarsest first (each kept at the end of the piece
    before it); by default paragraphs, lines, sentences (Latin and CJK), clauses and words.
    `RecursiveSplitter.markdown()` and `.python()` cut at headings and definitions first.
    Whitespace around a chunk is left out (its `start` counts it)."""

    def __init__(
        self,
        chunk_size: int = 1000,
        overlap: int = 0,
        *,
        separators: Sequence[str] | None = None,
        length: Length = "characters",
    ) -> None:
        if separators is not None and (
            isinstance(separators, str) or not all(isinstance(s, str) for s in separators)
        ):
            raise DocumentTypeError("separators must be a list of strings")
        levels = _PROSE if separators is None else [re.escape(s) for s in separators if s]
        self._setup(chunk_size, overlap, levels, length)

    @classmethod
    def markdown(
        cls, chunk_size: int = 1000, overlap: int = 0, *, length: Length = "characters"
    ) -> RecursiveSplitter:
        """A splitter for Markdown: cut before headings (`#` first, then `##`, …) and code
        fences, then as prose."""
        splitter = cls.__new__(cls)
        splitter._setup(chunk_size, overlap, _MARKDOWN, length)
        return splitter

    @classmethod
    def python(
        cls, chunk_size: int = 1000, overlap: int = 0, *, length: Length = "characters"
    ) -> RecursiveSplitter:
        """A splitter for Python source: cut before top-level classes, functions and
        decorators, then before methods, then as prose."""
        splitter = cls.__new__(cls)
        splitter._setup(chunk_size, overlap, _PYTHON, length)
        return splitter

    def _setup(self, chunk_size: int, overlap: int, levels: Sequence[str], length: Length) -> None:
        for name, value in (("chunk_size", chunk_size), ("overlap", overlap)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise DocumentTypeError(f"{name} must be an int, not {type(value).__name__}")
        if chunk_size < 1:
            raise DocumentValueError(f"chunk_size must be at least 1, not {chunk_size}")
        if not 0 <= overlap < chunk_size:
            raise DocumentValueError(
                f"overlap must be at least 0 and less than chunk_size ({chunk_size}), not {overlap}"
            )
        # The project's token estimate is a quarter of the characters, rounded up: a text is
        # within n tokens exactly when it is within 4n characters, so it is measured so.
        scale = CHARACTERS_PER_TOKEN if length == "tokens" else 1
        measure: Callable[[str], int] | None = None
        if callable(length):
            measure = length
        elif length not in ("characters", "tokens"):
            raise DocumentValueError(
                f"length must be 'characters', 'tokens' or a function, not {length!r}"
            )
        self.chunk_size = chunk_size
        self.overlap = overlap
        self._length_name = _name_of(length) if callable(length) else length
        self._levels = [re.compile(level) for level in levels]
        self._measure = measure
        self._capacity = chunk_size * scale
        self._overlap = overlap * scale

    def __repr__(self) -> str:
        """Every setting that changes the chunks (incremental indexing hashes it, so that a
        folder indexed again with other settings is split again)."""
        cuts = [level.pattern for level in self._levels]
        return (
            f"RecursiveSplitter(chunk_size={self.chunk_size}, overlap={self.overlap}, "
            f"length={self._length_name!r}, cuts={cuts!r})"
        )

    def split_text(self, text: str) -> Iterator[tuple[int, str]]:
        """(start, chunk) of each chunk of `text`, in order."""
        if not isinstance(text, str):
            raise DocumentTypeError(f"split_text takes a string, not {type(text).__name__}")
        pieces = list(self._pieces(text, 0, len(text), 0))
        sizes = [self._size(text, start, end) for start, end in pieces]
        yield from self._chunks(text, pieces, sizes)

    def split(self, documents: Document | Iterable[Document]) -> Iterator[Document]:
        """The chunks of each document, lazily: each keeps its document's metadata, adds its
        `start` (offset in the source's text: a document that is itself a chunk or section
        adds its own `start`) and `parent` (the source document's id), and is named
        `parent@start`."""
        for document in [documents] if isinstance(documents, Document) else documents:
            if not isinstance(document, Document):
                raise DocumentTypeError(f"split takes Documents, not {type(document).__name__}")
            yield from _chunk_documents(document, self.split_text(document.text))

    def _size(self, text: str, start: int, end: int) -> int:
        return end - start if self._measure is None else self._measure(text[start:end])

    def _pieces(self, text: str, start: int, end: int, level: int) -> Iterator[tuple[int, int]]:
        """Spans covering text[start:end], each fitting the size, cut as coarsely as can be."""
        if self._size(text, start, end) <= self._capacity:
            yield start, end
            return
        while level < len(self._levels):
            cuts = [m.end() for m in self._levels[level].finditer(text, start, end)]
            cuts = [cut for cut in cuts if start < cut < end]
            level += 1
            if cuts:
                for left, right in zip([start, *cuts], [*cuts, end], strict=True):
                    yield from self._pieces(text, left, right, level)
                return
        yield from self._cut(text, start, end)

    def _cut(self, text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
        """Spans of text[start:end] cut between characters, as wide as fit."""
        while start < end:
            width = min(self._capacity, end - start)
            while width > 1 and self._size(text, start, start + width) > self._capacity:
                width //= 2
            yield start, start + width
            start += width

    def _chunks(
        self, text: str, pieces: list[tuple[int, int]], sizes: list[int]
    ) -> Iterator[tuple[int, str]]:
        first = end = 0
        while first < len(pieces):
            # Pieces of whitespace alone would be left out of the chunk: beginning it with
            # them would give two chunks one start.
            while first < len(pieces) and text[slice(*pieces[first])].isspace():
                first += 1
            if first == len(pieces):
                return
            last, total = first, 0
            while last < len(pieces) and total + sizes[last] <= self._capacity:
                total += sizes[last]
                last += 1
            last = max(last, first + 1)
            # A function's count of joined pieces may exceed the sum of their counts.
            while last - first > 1 and self._measure is not None:
                if self._size(text, pieces[first][0], pieces[last - 1][1]) <= self._capacity:
                    break
                last -= 1
            chunk = _stripped(text, pieces[first][0], pieces[last - 1][1])
            # Overlap and whitespace alone would make a chunk inside the one before.
            if chunk is not None and chunk[0] + len(chunk[1]) > end:
                end = chunk[0] + len(chunk[1])
                yield chunk
            if last == len(pieces):
                return
            first = self._overlap_start(first, last, sizes)

    def _overlap_start(self, first: int, last: int, sizes: list[int]) -> int:
        """The first piece of the chunk after pieces[first:last]: as far back as `overlap`
        allows while the next new piece still fits beside it (each chunk brings new text),
        and past `first`."""
        start, back = last, 0
        while start > first + 1:
            longer = back + sizes[start - 1]
            if longer > self._overlap or longer + sizes[last] > self._capacity:
                break
            back = longer
            start -= 1
        return start


def _stripped(text: str, start: int, end: int) -> tuple[int, str] | None:
    chunk = text[start:end]
    kept = chunk.lstrip()
    if not kept:
        return None
    return start + len(chunk) - len(kept), kept.rstrip()


def _chunk_documents(document: Document, chunks: Iterable[tuple[int, str]]) -> Iterator[Document]:
    parent, offset = document.place()
    for start, chunk in chunks:
        at = offset + start
        metadata = {**document.metadata, "start": at, "parent": parent}
        yield Document(chunk, metadata, id=f"{parent}@{at}")


def _name_of(function: Callable[[str], int]) -> str:
    """A length function by its module and name (its repr would hold its address)."""
    name = getattr(function, "__qualname__", type(function).__qualname__)
    return f"{getattr(function, '__module__', None) or '?'}.{name}"
