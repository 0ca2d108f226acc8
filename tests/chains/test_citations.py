"""Reading an answer's citations back: what counts as a citation, what as an invented one,
and a single pass over hostile text."""

from __future__ import annotations

import pytest

from chainkit.chains._citations import MAX_ID_CHARS, Citations, read_citations

KNOWN = {"notes.md@0", "faq.csv#row=12", "draft [v2].md@40", "my notes.md@3"}


@pytest.mark.parametrize(
    ("answer", "cited", "invented"),
    [
        ("Paris [notes.md@0].", ["notes.md@0"], []),
        ("Paris [notes.md@0][faq.csv#row=12] [notes.md@0]", ["notes.md@0", "faq.csv#row=12"], []),
        ("both [notes.md@0, faq.csv#row=12]", ["notes.md@0", "faq.csv#row=12"], []),
        ("both [ notes.md@0 ; ghost.md@1 ]", ["notes.md@0"], ["ghost.md@1"]),
        ("balanced brackets in an id [draft [v2].md@40]", ["draft [v2].md@40"], []),
        ("spaces in an id [my notes.md@3]", ["my notes.md@3"], []),
        ("numbers are invented [1] [2]", [], ["1", "2"]),
        ("indexing items[0] and a[i] is no citation", [], []),
        ("a [link](https://example.com) is no citation", [], []),
        ('code `x = [ghost]` and\n```\n["a", "b"]\n```\nis passed over', [], []),
        ("a known id cites wherever it stands: x[notes.md@0]", ["notes.md@0"], []),
        ("empty [] and [  ] brackets", [], []),
        ("a bracket across lines [a\nb] is prose", [], []),
        (f"[{'x' * (MAX_ID_CHARS + 1)}] is prose", [], []),
        ("odd [notes.md@0 and ] [faq.csv#row=12]", ["faq.csv#row=12"], ["notes.md@0 and"]),
        ("an unclosed [ bracket is text [faq.csv#row=12]", ["faq.csv#row=12"], []),
        ("an unclosed ` backtick keeps the text [notes.md@0]", ["notes.md@0"], []),
        ("", [], []),
        ("巴黎是首都[notes.md@0]，塞纳河[ghost.md@9]。", ["notes.md@0"], ["ghost.md@9"]),
        ("café[ghost.md@9] is prose after a letter that is no identifier's", [], ["ghost.md@9"]),
    ],
)
def test_citations_read_from_an_answer(answer: str, cited: list[str], invented: list[str]) -> None:
    assert read_citations(answer, KNOWN) == Citations(tuple(cited), tuple(invented))


@pytest.mark.parametrize(
    "hostile",
    [
        "[" * 200_000 + "]" * 200_000,
        "[" * 400_000,
        "]" * 400_000,
        "` `` ``` " * 60_000 + "[k]",
        "[a]" * 150_000,
        "[a, " * 100_000 + "]",
    ],
)
def test_hostile_answers_are_read_in_one_pass(hostile: str) -> None:
    # Quadratic work on these would take minutes; one pass takes well under a second.
    read_citations(hostile, KNOWN)
