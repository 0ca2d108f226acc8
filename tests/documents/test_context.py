"""Documents as a model's context: each chunk under its id (and source), in order; a
pipeline step too."""

from __future__ import annotations

import pytest

from chainkit import chains, documents, retrievers
from chainkit.documents import Document
from chainkit.documents.errors import DocumentTypeError


def test_each_chunk_is_labelled_by_its_id_and_its_source_when_the_id_does_not_name_it() -> None:
    chunks = [
        Document("Paris is the capital.", {"source": "notes.md"}, "notes.md@0"),
        Document("A row.", {"source": "data/faq.csv"}, "row-12"),
        Document("By hand.", {}),
    ]
    assert documents.as_context(chunks) == (
        "[notes.md@0]\nParis is the capital.\n\n"
        "[row-12] (source: data/faq.csv)\nA row.\n\n"
        f"[{chunks[2].content_hash}]\nBy hand."
    )


def test_no_documents_make_an_empty_context() -> None:
    assert documents.as_context([]) == ""


def test_what_is_no_list_of_documents_is_refused() -> None:
    with pytest.raises(DocumentTypeError, match="a list of Documents, not one Document"):
        documents.as_context(Document("x"))  # type: ignore[arg-type]
    with pytest.raises(DocumentTypeError, match="takes Documents, not str"):
        documents.as_context(["x"])  # type: ignore[list-item]


def test_it_is_a_pipeline_step_after_a_retriever() -> None:
    pipeline = chains.pipe(documents.as_context)
    assert chains.run(pipeline, [Document("x", {}, "a@0")]) == "[a@0]\nx"
    retriever = retrievers.Lexical.from_documents(
        [Document("Paris is the capital.", {}, "notes.md@0"), Document("Bread.", {}, "b@0")]
    )
    found = chains.run(retriever | documents.as_context, "capital of France")
    assert found == "[notes.md@0]\nParis is the capital."
