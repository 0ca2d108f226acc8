"""The HTML loader: a page's main text, not its navigation."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from chainkit.documents._html_text import main_text
from chainkit.documents._reading import (
    DEFAULT_MAX_BYTES,
    check_encoding,
    read_text,
    regular_file_size,
)
from chainkit.documents.document import Document
from chainkit.documents.errors import DocumentValueError, ExtraMissingError

Extractor = Literal["auto", "trafilatura", "builtin"]

_DECLARED = re.compile(
    rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([\w.:-]{1,40})""", re.IGNORECASE
)
"""A `<meta charset>` (or `http-equiv` content type) within a page's first KiB, as browsers
look for it there."""
_HEAD_BYTES = 1024


def load_html(
    path: str | Path,
    *,
    extractor: Extractor = "auto",
    encoding: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[Document]:
    """The main text of the HTML page at `path` as one document (read as `load_text` reads a
    file; a charset its `<meta>` declares in its first KiB is read in, unless a byte order
    mark or `encoding` says otherwise), its `title` in the metadata and the extractor that
    read it in `extractor`.

    `"trafilatura"` reads the page with trafilatura (`pip install 'chainkit[html]'`), which
    tells an article from its surroundings best; `"builtin"` with the standard library: the
    text of `<main>` or `<article>` if the page has them, less navigation, headers, footers,
    scripts and forms. `"auto"` (the default) takes trafilatura when it is installed."""
    check_encoding(encoding)
    if extractor not in ("auto", "trafilatura", "builtin"):
        raise DocumentValueError(
            f"extractor must be 'auto', 'trafilatura' or 'builtin', not {extractor!r}"
        )
    if extractor == "trafilatura":
        _trafilatura()
    return _load(Path(path), extractor, encoding, max_bytes)


def _load(
    path: Path, extractor: Extractor, encoding: str | None, max_bytes: int
) -> Iterator[Document]:
    regular_file_size(path)  # before the charset is looked for: a pipe would wait
    html = read_text(path, encoding or _declared_charset(path), max_bytes)
    title, text = main_text(html)
    used = "builtin"
    if extractor != "builtin" and (trafilatura := _trafilatura(required=extractor != "auto")):
        extracted = trafilatura.extract(
            html, include_comments=False, include_tables=True, favor_precision=True
        )
        if extracted:
            text, used = extracted, "trafilatura"
    metadata = {"source": str(path), "format": "html", "title": title, "extractor": used}
    yield Document(text, metadata, id=str(path))


def _declared_charset(path: Path) -> str | None:
    """The known encoding the page's `<meta>` declares, if any."""
    try:
        with path.open("rb") as page:
            head = page.read(_HEAD_BYTES)
    except OSError:
        return None  # read_text names the failure
    declared = _DECLARED.search(head)
    if declared is None:
        return None
    try:
        return codecs.lookup(declared.group(1).decode("ascii")).name
    except LookupError:
        return None


def _trafilatura(*, required: bool = True) -> Any:
    """The trafilatura module; None when it is not installed and not `required`."""
    try:
        import trafilatura
    except ModuleNotFoundError:
        if required:
            raise ExtraMissingError(
                "load_html(extractor='trafilatura') needs trafilatura: pip install 'chainkit[html]'"
            ) from None
        return None
    return trafilatura
