"""The PDF loader: a document per page, read with pypdf (the `pdf` extra)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chainkit.documents._reading import regular_file_size
from chainkit.documents.document import Document
from chainkit.documents.errors import ExtraMissingError, LoadError


def load_pdf(path: str | Path, *, password: str | None = None) -> Iterator[Document]:
    """A document per page of the PDF file at `path`, read one page at a time with pypdf
    (`pip install 'chainkit[pdf]'`): the page's text, with `source` and `page` (from 1) in
    the metadata and the id `path#page=N`. A file pypdf cannot read, an encrypted one without
    its `password`, or a page whose text cannot be taken raises LoadError naming the page."""
    pypdf = _pypdf()
    return _pages(Path(path), pypdf, password)


def _pages(path: Path, pypdf: Any, password: str | None) -> Iterator[Document]:
    from pypdf.errors import PyPdfError

    regular_file_size(path)
    try:
        reader = pypdf.PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(password or ""):
            raise LoadError(path, "is encrypted; give its password with password=")
        count = len(reader.pages)
    except OSError as error:
        raise LoadError(path, f"cannot be read: {error.strerror or error}") from error
    except (PyPdfError, ValueError, KeyError, TypeError) as error:
        raise LoadError(path, f"is not a PDF pypdf can read: {error}") from None
    for number in range(1, count + 1):
        try:
            text = reader.pages[number - 1].extract_text()
        except (PyPdfError, ValueError, KeyError, TypeError) as error:
            raise LoadError(path, f"its text cannot be read: {error}", page=number) from None
        metadata = {"source": str(path), "format": "pdf", "page": number}
        yield Document(text, metadata, id=f"{path}#page={number}")


def _pypdf() -> Any:
    try:
        import pypdf
    except ModuleNotFoundError:
        raise ExtraMissingError("load_pdf needs pypdf: pip install 'chainkit[pdf]'") from None
    return pypdf
