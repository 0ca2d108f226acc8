"""Splitters cut texts into chunks within their size that keep their place in the source
(`text[start:start + len(chunk)] == chunk`), at the coarsest separator that serves, in time
linear in the text."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainkit._tokens import text_tokens
from chainkit.documents import Document, MarkdownHeaderSplitter, RecursiveSplitter, load_markdown
from chainkit.documents.errors import DocumentTypeError, DocumentValueError

DATA = Path(__file__).parent / "data"

_CJK_OR_WORD = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]|[^\s\u3040-\u30ff\u4e00-\u9fff]+")


def cjk_tokens(text: str) -> int:
    """A tokenizer's count as a function: a CJK character or a run of other non-spaces."""
    return len(_CJK_OR_WORD.findall(text))


LENGTHS = {"characters": len, "tokens": text_tokens, "function": cjk_tokens}


@given(
    text=st.text(alphabet="ab c.\n\t#。！？中文、,", max_size=400),
    chunk_size=st.integers(1, 60),
    overlap_share=st.floats(0, 0.99),
    length=st.sampled_from(sorted(LENGTHS)),
)
def test_each_chunk_is_where_its_start_says_within_size_and_together_they_cover_the_text(
    text, chunk_size, overlap_share, length
):
    overlap = int(chunk_size * overlap_share)
    measure = LENGTHS[length]
    splitter = RecursiveSplitter(
        chunk_size, overlap, length=cjk_tokens if length == "function" else length
    )
    chunks = list(splitter.split_text(text))
    covered: set[int] = set()
    for start, chunk in chunks:
        assert chunk and chunk == chunk.strip()
        assert text[start : start + len(chunk)] == chunk
        assert measure(chunk) <= chunk_size
        covered.update(range(start, start + len(chunk)))
    assert {i for i, c in enumerate(text) if not c.isspace()} <= covered
    starts = [start for start, _ in chunks]
    assert starts == sorted(set(starts))
    ends = [start + len(chunk) for start, chunk in chunks]
    assert ends == sorted(set(ends))  # each chunk brings text the one before did not have
    if length == "characters":
        for (before, chunk), (after, _) in pairwise(chunks):
            assert before + len(chunk) - after <= overlap


def test_prose_is_cut_at_paragraphs_then_sentences_then_words():
    text = "One two three. Four five six.\n\nSeven eight nine ten eleven twelve."
    assert [chunk for _, chunk in RecursiveSplitter(32).split_text(text)] == [
        "One two three. Four five six.",
        "Seven eight nine ten eleven",
        "twelve.",
    ]


def test_overlap_repeats_the_end_of_the_chunk_before():
    text = "alpha beta gamma delta epsilon zeta eta theta"
    chunks = [chunk for _, chunk in RecursiveSplitter(17, 6).split_text(text)]
    assert chunks == ["alpha beta gamma", "gamma delta", "delta epsilon", "zeta eta theta"]


def test_overlap_gives_way_to_the_next_piece():
    # With "by the lighthouse, " kept as overlap, the next clause would not fit: a chunk of
    # overlap alone, then another, would follow.
    text = "Tickets are sold at the kiosk by the lighthouse, and on board when it is closed."
    chunks = [chunk for _, chunk in RecursiveSplitter(45, 20).split_text(text)]
    assert chunks == [
        "Tickets are sold at the kiosk by the",
        "at the kiosk by the lighthouse,",
        "lighthouse, and on board when it is closed.",
    ]


def test_chinese_and_japanese_are_cut_at_sentence_ends_not_mid_word():
    chinese = "今天天气很好。我们去公园散步吧！你觉得怎么样？好的。"
    assert [chunk for _, chunk in RecursiveSplitter(10).split_text(chinese)] == [
        "今天天气很好。",
        "我们去公园散步吧！",
        "你觉得怎么样？好的。",
    ]
    japanese = "東京は日本の首都です。大阪は西にあります。京都には古い寺が多いです。"
    assert [chunk for _, chunk in RecursiveSplitter(14).split_text(japanese)] == [
        "東京は日本の首都です。",
        "大阪は西にあります。",
        "京都には古い寺が多いです。",
    ]


def test_a_text_with_no_separator_is_cut_between_characters():
    assert list(RecursiveSplitter(4).split_text("abcdefghij")) == [
        (0, "abcd"),
        (4, "efgh"),
        (8, "ij"),
    ]


def test_sizes_in_tokens_use_the_projects_estimate_or_a_given_count():
    text = "word " * 100
    by_estimate = list(RecursiveSplitter(10, length="tokens").split_text(text))
    assert all(text_tokens(chunk) <= 10 for _, chunk in by_estimate)
    assert max(len(chunk) for _, chunk in by_estimate) > 30  # about four characters a token
    by_count = list(RecursiveSplitter(10, length=cjk_tokens).split_text(text))
    assert [cjk_tokens(chunk) for _, chunk in by_count] == [10] * 10


def test_the_markdown_preset_cuts_before_headings():
    [guide] = load_markdown(DATA / "guide.md")
    chunks = [chunk for _, chunk in RecursiveSplitter.markdown(120).split_text(guide.text)]
    assert [chunk.splitlines()[0] for chunk in chunks] == [
        "# Ferry guide",
        "## Tickets",
        "## Timetable",
    ]


def test_the_python_preset_cuts_between_definitions():
    source = (
        "import os\n\n\ndef first():\n    return 1\n\n\n"
        "class Second:\n    def method(self):\n        return 2\n"
    )
    chunks = [chunk for _, chunk in RecursiveSplitter.python(60).split_text(source)]
    assert chunks == [
        "import os\n\n\ndef first():\n    return 1",
        "class Second:\n    def method(self):\n        return 2",
    ]


def test_documents_split_into_chunks_that_keep_source_start_and_parent():
    document = Document("First part here.\n\nSecond part here.", {"source": "a.txt"}, id="a.txt")
    chunks = list(RecursiveSplitter(20).split(document))
    assert [(chunk.id, chunk.text) for chunk in chunks] == [
        ("a.txt@0", "First part here."),
        ("a.txt@18", "Second part here."),
    ]
    assert chunks[1].metadata == {"source": "a.txt", "start": 18, "parent": "a.txt"}


def test_a_records_own_start_column_is_not_taken_for_an_offset():
    row = Document("Boats leave at six.", {"start": "6:00", "source": "t.csv"}, id="t.csv#row=1")
    [chunk] = RecursiveSplitter(100).split(row)
    assert chunk.id == "t.csv#row=1@0"
    assert chunk.metadata["start"] == 0 and chunk.metadata["parent"] == "t.csv#row=1"


def test_markdown_sections_carry_their_headings_and_place():
    [guide] = load_markdown(DATA / "guide.md")
    sections = list(MarkdownHeaderSplitter().split(guide))
    headings = [
        {key: value for key, value in section.metadata.items() if key.startswith("h")}
        for section in sections
    ]
    assert headings == [
        {"h1": "Ferry guide"},
        {"h1": "Ferry guide", "h2": "Tickets"},
        {"h1": "Ferry guide", "h2": "Timetable"},
        {"h1": "Ferry guide", "h2": "Timetable", "h3": "Weekdays"},
        {"h1": "Ferry guide", "h2": "Timetable", "h3": "Weekends"},
    ]
    assert "# not a heading" in sections[1].text  # inside a code fence
    assert "".join(section.text for section in sections) == guide.text
    for section in sections:
        start = section.metadata["start"]
        assert guide.text[start : start + len(section.text)] == section.text
    shallow = MarkdownHeaderSplitter(depth=2).split(guide)
    assert len(list(shallow)) == 3


def test_chunks_of_sections_count_their_start_in_the_whole_document():
    [guide] = load_markdown(DATA / "guide.md")
    sections = MarkdownHeaderSplitter().split(guide)
    for chunk in RecursiveSplitter(25, 5).split(sections):
        start = chunk.metadata["start"]
        assert guide.text[start : start + len(chunk.text)] == chunk.text
        assert chunk.metadata["parent"] == guide.id
        assert chunk.id == f"{guide.id}@{start}"


def test_splitting_measures_each_character_a_bounded_number_of_times():
    # Quadratic re-joining would measure each chunk again with every piece added to it.
    paragraph = "The ferry leaves at six. " * 30 + "\n\n"
    text = paragraph * (1_000_000 // len(paragraph))
    measured = 0

    def counting(piece: str) -> int:
        nonlocal measured
        measured += len(piece)
        return len(piece)

    chunks = list(RecursiveSplitter(500, 50, length=counting).split_text(text))
    assert len(chunks) > 2000
    assert measured < 10 * len(text)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"chunk_size": 0}, DocumentValueError, "chunk_size must be at least 1"),
        ({"chunk_size": 10, "overlap": 10}, DocumentValueError, "less than chunk_size"),
        ({"chunk_size": "10"}, DocumentTypeError, "chunk_size must be an int"),
        ({"length": "words"}, DocumentValueError, "length must be"),
        ({"separators": "\n"}, DocumentTypeError, "separators must be a list"),
    ],
)
def test_settings_a_splitter_cannot_take_are_named(arguments, error, message):
    with pytest.raises(error, match=message):
        RecursiveSplitter(**arguments)


def test_a_splitter_s_repr_shows_every_setting_that_changes_its_chunks():
    def words(text: str) -> int:
        return len(text.split())

    shown = {
        repr(splitter)
        for splitter in (
            RecursiveSplitter(),
            RecursiveSplitter(500),
            RecursiveSplitter(1000, 100),
            RecursiveSplitter(length="tokens"),
            RecursiveSplitter(length=words),
            RecursiveSplitter(separators=["\n"]),
            RecursiveSplitter.markdown(),
            RecursiveSplitter.python(),
        )
    }
    assert len(shown) == 8
    assert repr(RecursiveSplitter(length=words)) == repr(RecursiveSplitter(length=words))
    assert "0x" not in repr(RecursiveSplitter(length=words))
    assert repr(MarkdownHeaderSplitter(2)) == "MarkdownHeaderSplitter(depth=2)"


def test_a_splitter_refuses_what_is_not_text():
    with pytest.raises(DocumentTypeError, match="takes a string"):
        list(RecursiveSplitter().split_text(b"bytes"))  # type: ignore[arg-type]
    with pytest.raises(DocumentTypeError, match="takes Documents"):
        list(RecursiveSplitter().split(["plain text"]))  # type: ignore[list-item]
    with pytest.raises(DocumentValueError, match="depth must be from 1 to 6"):
        MarkdownHeaderSplitter(depth=7)
