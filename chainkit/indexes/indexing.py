"""Incremental indexing: a folder (any documents, grouped by the `source` of their metadata)
indexed again adds the sources that are new, replaces those that changed, deletes those that
are gone and skips the rest, by comparing each source's content hash with the one the index
recorded (`SourceRecords`).

A source's hash covers what its chunks are made from: each of its documents (id, text and
metadata, in order), the splitters' settings (their reprs) and the embedder's identity. So
editing a file, changing the chunk size or indexing with vectors a folder first indexed
without them re-indexes what it touches, and nothing else.

Each source is written in one step (`replace_source`; an index with `replace_sources`, such as
`SQLIndex`, writes a batch of sources in one transaction, a commit for many small files): a
run killed part way leaves every source whole, old or new, and the next run finishes the
work. The documents are read lazily, a source at a time; the chunks to embed and write are
gathered across sources, `batch_size` at a time.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Literal, Protocol, runtime_checkable

from chainkit._text import described
from chainkit._threads import in_thread
from chainkit.documents import DirectoryLoader, Document, Skipped
from chainkit.indexes.base import SourceRecords, SourceReplacement
from chainkit.indexes.errors import IndexConfigError, IndexTypeError
from chainkit.schema.embedder import Embedder

__all__ = ["Cleanup", "IndexingResult", "Splitter", "aindex_documents", "index_documents"]

Cleanup = Literal["full", "incremental"]
"""What happens to recorded sources a run does not meet: `"full"` deletes those within its
scope, `"incremental"` keeps them."""

_HASH_VERSION = "chainkit-indexing-1"
"""Changes when what a source's hash covers changes, so that every source is indexed again."""


@runtime_checkable
class Splitter(Protocol):
    """What cuts documents into chunks, such as `documents.RecursiveSplitter`; its repr shows
    every setting that changes the chunks."""

    def split(self, documents: Iterable[Document]) -> Iterable[Document]: ...


@dataclass
class IndexingResult:
    """What a run of `index_documents` did, by source (a file) and by chunk."""

    added: int = 0
    """Sources the index had no record of, indexed."""
    updated: int = 0
    """Sources whose content (or splitting, or embedder) changed, indexed again."""
    skipped: int = 0
    """Sources unchanged since they were indexed, left as they were."""
    deleted: int = 0
    """Sources recorded in the index that this run did not meet, removed (full cleanup)."""
    chunks_written: int = 0
    """Chunks written for the sources added and updated."""
    chunks_deleted: int = 0
    """Chunks of the deleted sources removed."""
    not_read: list[Skipped] = field(default_factory=list)
    """What the loader passed by (a `DirectoryLoader`'s `skipped`: binary files, links that
    loop, files that cannot be read)."""

    @property
    def sources(self) -> int:
        """The sources this run met."""
        return self.added + self.updated + self.skipped


@dataclass
class _Source:
    """One source's chunks, waiting to be written."""

    name: str
    content_hash: str
    chunks: list[Document]
    new: bool


def index_documents(
    documents: Iterable[Document],
    index: SourceRecords,
    *,
    splitter: Splitter | Sequence[Splitter] | None = None,
    cleanup: Cleanup = "full",
    scope: str | Path | None = None,
    batch_size: int = 256,
    on_progress: Callable[[IndexingResult], None] | None = None,
) -> IndexingResult:
    """Indexes `documents` into `index` incrementally, as the module says; what it did.

    The documents of one source (`metadata["source"]`, a str every document needs) come one
    after another, as loaders yield them, and no id stands in two sources (a loader's ids
    hold the file's path). Each source new or changed is cut by `splitter`
    (or by each of a list of splitters in turn; none keeps the documents whole), embedded by
    the index's `embedder` when it has one (`batch_size` chunks to a call; an embedder
    behind `llms.CachedEmbeddings` embeds only the chunks it has not seen) and written with
    its hash through `index.replace_source` (those of a batch in one transaction through
    `index.replace_sources`, when the index has it).

    With `cleanup="full"`, recorded sources this run did not meet are deleted once every
    document was read, among those within its scope: those under the folder `scope` when
    given; for a `DirectoryLoader`, the files it would read (within its folder, matching its
    glob: two folders, or two globs, share one index); else every source. `"incremental"`
    deletes none. `on_progress` is called with the counts so far after each source."""
    splitters = _checked_splitters(splitter)
    _check_settings(index, cleanup, batch_size)
    within = _scope(documents, scope)
    embedder = _embedder_of(index)
    salt = _salt(splitters, embedder)
    recorded = index.source_hashes()
    result = IndexingResult()
    writer = _Writer(index, embedder, batch_size, result, on_progress)
    met: set[str] = set()
    for name, group in _by_source(documents):
        if name in met:
            raise IndexConfigError(
                f"the documents of source {name!r} came apart, with other sources' between "
                "them: give each source's documents one after another"
            )
        met.add(name)
        content_hash = _source_hash(salt, group)
        if recorded.get(name) == content_hash:
            result.skipped += 1
            if on_progress is not None:
                on_progress(result)
            continue
        writer.add(_Source(name, content_hash, _split(group, splitters), name not in recorded))
    writer.flush()
    if isinstance(documents, DirectoryLoader):
        result.not_read = list(documents.skipped)
    if cleanup == "full":
        gone = [name for name in recorded if name not in met and within(name)]
        if gone:
            result.chunks_deleted = index.delete_sources(gone)
            result.deleted = len(gone)
    return result


async def aindex_documents(
    documents: Iterable[Document],
    index: SourceRecords,
    *,
    splitter: Splitter | Sequence[Splitter] | None = None,
    cleanup: Cleanup = "full",
    scope: str | Path | None = None,
    batch_size: int = 256,
    on_progress: Callable[[IndexingResult], None] | None = None,
) -> IndexingResult:
    """`index_documents` for async code: the whole run (reading files, embedding, writing)
    in a worker thread, so the event loop never waits; `on_progress` is called there."""
    run = functools.partial(
        index_documents,
        documents,
        index,
        splitter=splitter,
        cleanup=cleanup,
        scope=scope,
        batch_size=batch_size,
        on_progress=on_progress,
    )
    return await in_thread(run)


class _Writer:
    """Gathers sources to write until they hold `batch_size` chunks, then embeds their
    chunks together and writes each source in one step."""

    def __init__(
        self,
        index: SourceRecords,
        embedder: Embedder | None,
        batch_size: int,
        result: IndexingResult,
        on_progress: Callable[[IndexingResult], None] | None,
    ) -> None:
        self._index = index
        self._embedder = embedder
        self._batch_size = batch_size
        self._result = result
        self._on_progress = on_progress
        self._waiting: list[_Source] = []
        self._chunks = 0

    def add(self, source: _Source) -> None:
        self._waiting.append(source)
        self._chunks += len(source.chunks)
        if self._chunks >= self._batch_size:
            self.flush()

    def flush(self) -> None:
        waiting, self._waiting, self._chunks = self._waiting, [], 0
        vectors = self._vectors([chunk for source in waiting for chunk in source.chunks])
        replacements = []
        at = 0
        for source in waiting:
            count = len(source.chunks)
            own = None if vectors is None else vectors[at : at + count]
            at += count
            replacements.append(
                SourceReplacement(source.name, source.content_hash, source.chunks, own)
            )
        replace_all = getattr(self._index, "replace_sources", None)
        if callable(replace_all) and len(replacements) > 1:
            replace_all(replacements)  # one transaction for the batch
        else:
            for each in replacements:
                self._index.replace_source(
                    each.source, each.content_hash, each.documents, each.vectors
                )
        for source in waiting:
            self._counted(source)

    def _vectors(self, chunks: list[Document]) -> list[list[float]] | None:
        if self._embedder is None:
            return None
        texts = [chunk.text for chunk in chunks]
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            vectors += self._embedder.embed_documents(texts[start : start + self._batch_size])
        if len(vectors) != len(texts):
            raise IndexConfigError(
                f"the embedder gave {len(vectors)} vectors for {len(texts)} chunks"
            )
        return vectors

    def _counted(self, source: _Source) -> None:
        result = self._result
        if source.new:
            result.added += 1
        else:
            result.updated += 1
        result.chunks_written += len(source.chunks)
        if self._on_progress is not None:
            self._on_progress(result)


def _by_source(documents: Iterable[Document]) -> Iterator[tuple[str, list[Document]]]:
    """Each run of consecutive documents of one source, read lazily."""
    if isinstance(documents, Document | str) or not isinstance(documents, Iterable):
        raise IndexTypeError(
            f"index_documents takes an iterable of Documents, got {described(documents)}"
        )
    name = ""
    group: list[Document] = []
    for document in documents:
        source = _source_of(document)
        if source != name and group:
            yield name, group
            group = []
        name = source
        group.append(document)
    if group:
        yield name, group


def _source_of(document: object) -> str:
    if not isinstance(document, Document):
        raise IndexTypeError(f"index_documents takes Documents, got {described(document)}")
    source = document.metadata.get("source")
    if not isinstance(source, str) or not source:
        raise IndexConfigError(
            f"document {document.id!r} has no source: incremental indexing keys each document "
            "by the str `source` of its metadata (a loader sets it to the file's path)"
        )
    return source


def _split(group: list[Document], splitters: Sequence[Splitter]) -> list[Document]:
    chunks: Iterable[Document] = group
    for splitter in splitters:
        chunks = splitter.split(chunks)
    return list(chunks)


def _source_hash(salt: bytes, group: list[Document]) -> str:
    """The SHA-256 of what a source's chunks are made from (see the module)."""
    digest = hashlib.sha256(salt)
    for document in group:
        entry = [document.id, document.text, dict(document.metadata)]
        line = json.dumps(entry, sort_keys=True, default=repr, ensure_ascii=False)
        digest.update(line.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


def _salt(splitters: Sequence[Splitter], embedder: Embedder | None) -> bytes:
    """What every source's hash starts from: the version, the splitters and the embedder."""
    settings = [_HASH_VERSION, [repr(splitter) for splitter in splitters], _identity(embedder)]
    return json.dumps(settings).encode("utf-8", "surrogatepass") + b"\n"


def _identity(embedder: Embedder | None) -> str | None:
    """An embedder by its namespace (`llms.CachedEmbeddings`), else its class and model."""
    if embedder is None:
        return None
    namespace = getattr(embedder, "namespace", None)
    if isinstance(namespace, str):
        return namespace
    kind = type(embedder)
    model = getattr(embedder, "model", None)
    return f"{kind.__module__}.{kind.__qualname__}" + (
        f":{model}" if isinstance(model, str) else ""
    )


def _embedder_of(index: SourceRecords) -> Embedder | None:
    embedder = getattr(index, "embedder", None)
    return embedder if isinstance(embedder, Embedder) else None


def _scope(documents: Iterable[Document], scope: str | Path | None) -> Callable[[str], bool]:
    """Whether a recorded source is within what the run covers (see `index_documents`)."""
    if scope is not None:
        return lambda source: PurePath(source).is_relative_to(scope)
    if isinstance(documents, DirectoryLoader):
        return documents.covers
    return lambda source: True


def _checked_splitters(splitter: Splitter | Sequence[Splitter] | None) -> list[Splitter]:
    if splitter is None:
        return []
    splitters = list(splitter) if isinstance(splitter, Sequence) else [splitter]
    for each in splitters:
        if not isinstance(each, Splitter):
            raise IndexTypeError(
                "splitter must have split(documents), such as documents.RecursiveSplitter(); "
                f"got {described(each)}"
            )
        if type(each).__repr__ is object.__repr__:
            raise IndexConfigError(
                f"splitter {type(each).__qualname__} needs a __repr__ showing its settings: "
                "they are part of each source's hash, so that changing them splits again"
            )
    return splitters


def _check_settings(index: object, cleanup: object, batch_size: object) -> None:
    if not isinstance(index, SourceRecords):
        raise IndexTypeError(
            "index must keep records of its sources (source_hashes, replace_source, "
            f"delete_sources), such as indexes.InMemoryIndex(); got {described(index)}"
        )
    if cleanup not in ("full", "incremental"):
        raise IndexConfigError(f"cleanup must be 'full' or 'incremental', not {cleanup!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise IndexConfigError(f"batch_size must be an int of at least 1, not {batch_size!r}")
