"""How the offline model answers from documents it is shown: the sentence that best matches
the question (by BM25, the engine it picks tools with), cited by its document's label, as an
answer chain asks (`chains.answer_chain`, `documents.as_context`).

The documents are the blocks of the last user message that each start with a label line,
`[id]` or `[id] (source: …)`, or else, under `Documents:`, its lines that end with a
citation (the notes a map-reduce answer chain reduces); the question is what follows its last
`Question:`. A message without both is no such request."""

from __future__ import annotations

from collections.abc import Iterator

from chainkit._search.bm25 import LexicalIndex
from chainkit._search.terms import terms, tokens

__all__ = ["answer_from_documents"]

_QUESTION = "Question:"
_SOURCE = " (source: "
_NOTES_HEADING = "Documents:"
"""What an answer chain's prompt shows its documents, or its notes, under."""
_SENTENCE_ENDS = frozenset(".!?")
_CJK_SENTENCE_ENDS = frozenset("。！？")  # end a sentence wherever they stand


def answer_from_documents(message: str) -> str | None:
    """The best sentence of the documents in `message` and its citation, or None when
    `message` shows no documents and question or no sentence shares a term with it."""
    documents, _, question = message.rpartition(_QUESTION)
    if not documents:
        return None
    index = LexicalIndex[int]()
    found: list[tuple[str, str]] = []  # (sentence, label)
    blocks = list(_blocks(documents))
    if not blocks and documents.lstrip().startswith(_NOTES_HEADING):
        blocks = list(_cited_lines(documents))
    for label, text in blocks:
        for sentence in _sentences(text):
            index.add(len(found), terms(sentence))
            found.append((sentence, label))
    best = index.search(tokens(question), 1)
    if not best:
        return None
    sentence, label = found[best[0][0]]
    return f"{sentence} [{label}]"


def _blocks(text: str) -> Iterator[tuple[str, str]]:
    """Each labelled block of `text`: its label and its text."""
    label: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        named = _label(line)
        if named is not None:
            if label is not None:
                yield label, "\n".join(lines)
            label, lines = named, []
        elif label is not None:
            lines.append(line)
    if label is not None:
        yield label, "\n".join(lines)


def _cited_lines(text: str) -> Iterator[tuple[str, str]]:
    """Each line of `text` that ends with a citation, `… [id]`, as its id and its text: the
    notes a map-reduce answer chain reduces (a map step's replies, as this model writes
    them), when no labelled block is shown."""
    for line in text.splitlines():
        said, opened, cited = line.strip().removesuffix("]").rpartition(" [")
        if opened and said and cited and line.rstrip().endswith("]"):
            yield cited, said


def _label(line: str) -> str | None:
    """The id a label line names (`[id]` or `[id] (source: …)`), else None."""
    if not line.startswith("["):
        return None
    end = line.find("]")
    rest = line[end + 1 :]
    if end < 2 or "[" in line[1:end]:
        return None
    if rest and not (rest.startswith(_SOURCE) and rest.endswith(")")):
        return None
    return line[1:end]


def _sentences(text: str) -> Iterator[str]:
    """The sentences of `text`: ended by 。！？, by . ! ? before no letter or digit (3.5
    goes on), or by a line's end."""
    for line in text.splitlines():
        start = 0
        for i, char in enumerate(line):
            if char in _CJK_SENTENCE_ENDS or (
                char in _SENTENCE_ENDS and (i + 1 == len(line) or not line[i + 1].isalnum())
            ):
                sentence = line[start : i + 1].strip()
                if sentence:
                    yield sentence
                start = i + 1
        rest = line[start:].strip()
        if rest:
            yield rest
