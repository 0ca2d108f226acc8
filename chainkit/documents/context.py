"""Documents as the context a model answers from: each chunk under a label that names it by
its id, so that the model can cite it as `[id]` and the citation can be checked
(`chains.answer_chain` reads them back).

    [notes.md@1200] (source: notes.md)
    The chunk's text.

    [faq.csv#row=12] (source: faq.csv)
    ...

The source is shown when the metadata has one that the id does not start with already.
"""

from __future__ import annotations

from collections.abc import Iterable

from chainkit.documents.document import Document
from chainkit.documents.errors import DocumentTypeError

__all__ = ["as_context", "context_block"]

SEPARATOR = "\n\n"
"""Between two chunks' blocks: a blank line."""


def as_context(documents: Iterable[Document]) -> str:
    """`documents` as one text, each under its label (see the module), best first as given;
    a pipeline step too: `retriever | documents.as_context | prompt`."""
    if isinstance(documents, Document | str | bytes):
        raise DocumentTypeError(
            f"as_context takes a list of Documents, not one {type(documents).__name__}"
        )
    return SEPARATOR.join(context_block(document) for document in documents)


def context_block(document: Document) -> str:
    """One document's block of `as_context`: its label line, then its text."""
    if not isinstance(document, Document):
        raise DocumentTypeError(f"as_context takes Documents, not {type(document).__name__}")
    return f"{label(document)}\n{document.text}"


def label(document: Document) -> str:
    """`[id]`, and the document's source when the id does not name it already."""
    source = document.metadata.get("source")
    if isinstance(source, str) and source and not document.id.startswith(source):
        return f"[{document.id}] (source: {source})"
    return f"[{document.id}]"
