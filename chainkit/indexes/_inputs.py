"""What every index checks of what it is given (its embedder, documents, ids, vectors, each
vector scaled to length 1 and of the index's dimensions), and how it embeds documents and
queries (awaited in async code when the embedder can be)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from chainkit._search.vectors import scaled_to_unit
from chainkit._text import described
from chainkit._threads import in_thread
from chainkit.documents import Document
from chainkit.indexes.errors import IndexConfigError, IndexTypeError
from chainkit.schema.embedder import Embedder


def checked_embedder(embedder: object) -> Embedder | None:
    if embedder is not None and not isinstance(embedder, Embedder):
        raise IndexTypeError(
            "embedder must have embed_documents(texts) and embed_query(text), such as "
            f"llms.OpenAIEmbeddings(); got {described(embedder)}"
        )
    return embedder


def checked_documents(documents: Iterable[Document]) -> list[Document]:
    if isinstance(documents, Document | str):
        raise IndexTypeError("documents is a list of documents, not one: give [document]")
    batch = list(documents)
    for position, document in enumerate(batch):
        if not isinstance(document, Document):
            raise IndexTypeError(
                f"documents[{position}] must be a documents.Document, got {described(document)}"
            )
    return batch


def check_sources(batch: Sequence[Document], source: str) -> None:
    """Checks that every document of `batch` came from `source` (its metadata's `source`)."""
    for document in batch:
        if document.metadata.get("source") != source:
            raise IndexConfigError(
                f"document {document.id!r} has source "
                f"{document.metadata.get('source')!r}, not {source!r}"
            )


def checked_ids(ids: Iterable[str], doing: str, noun: str = "id") -> list[str]:
    """`ids` (or sources: `noun`) as a list of str; `doing` names the call ("delete")."""
    if isinstance(ids, str):
        raise IndexTypeError(f"{doing} takes a list of {noun}s, not one str: {doing}([{noun}])")
    listed = list(ids)
    for id_ in listed:
        if not isinstance(id_, str):
            raise IndexTypeError(f"{doing} takes each {noun} as a str, got {described(id_)}")
    return listed


def needed(embedder: Embedder | None, index: str, doing: str) -> Embedder:
    """`embedder`, or the error saying that `index` (its class name) has none to do `doing`."""
    if embedder is None:
        raise IndexConfigError(
            f"this index has no embedder to {doing}: give {index}(embedder=...) "
            "or the vectors themselves"
        )
    return embedder


def vectors_for(
    batch: Sequence[Document], vectors: Sequence[Sequence[float]] | None
) -> Sequence[Sequence[float]]:
    """`vectors`, checked to be one for each document of `batch`."""
    if vectors is None or isinstance(vectors, str | bytes) or not isinstance(vectors, Sequence):
        raise IndexTypeError(f"vectors must be a list of vectors, got {described(vectors)}")
    if len(vectors) != len(batch):
        raise IndexConfigError(
            f"{len(batch)} documents came with {len(vectors)} vectors: give one each"
        )
    return vectors


async def aembedded(embedder: Embedder, batch: Sequence[Document]) -> list[list[float]]:
    """The vectors of `batch`'s texts: the embedder's `aembed_documents` awaited when it has
    one, else `embed_documents` in a worker thread."""
    texts = [document.text for document in batch]
    embed = getattr(embedder, "aembed_documents", None)
    if callable(embed):
        vectors: list[list[float]] = await embed(texts)
        return vectors
    return await in_thread(embedder.embed_documents, texts)


async def aquery_vector(embedder: Embedder, query: str) -> Sequence[float]:
    """The vector of `query`, embedded as `aembedded` embeds."""
    embed = getattr(embedder, "aembed_query", None)
    if callable(embed):
        vector: Sequence[float] = await embed(query)
        return vector
    return await in_thread(embedder.embed_query, query)


def unit_vector(vector: object) -> list[float]:
    """`vector` (a non-empty sequence of finite numbers) scaled to length 1."""
    if isinstance(vector, str | bytes) or not isinstance(vector, Sequence) or not vector:
        raise IndexTypeError(f"a vector is a non-empty list of numbers, not {described(vector)}")
    try:
        numbers = list(map(float, vector))
    except (TypeError, ValueError):
        raise IndexTypeError("a vector holds numbers only") from None
    scaled = scaled_to_unit(numbers)
    if scaled is None:
        raise IndexConfigError("a vector holds an infinity or NaN")
    return scaled


def check_dimensions(length: int, dimensions: int | None) -> None:
    if dimensions is not None and length != dimensions:
        raise IndexConfigError(
            f"a vector of {length} dimensions, where this index's have {dimensions}"
        )
