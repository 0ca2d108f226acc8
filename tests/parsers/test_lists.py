"""parsers.ListParser: numbered, bulleted, plain and comma-separated lists; streamed, the list
so far each time one more item is whole."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainkit import parsers
from chainkit.parsers.errors import ParserConfigError
from tests.parsers.streaming import CUTS, by_character, partials, pieces

ITEMS = st.lists(
    st.text(st.characters(blacklist_characters=",\n\r", blacklist_categories=["Cs"]), min_size=1)
    .map(str.strip)
    .filter(bool),
    min_size=1,
    max_size=8,
)


@pytest.mark.parametrize(
    "text",
    [
        "1. Paris\n2. Rome\n3. Oslo",
        "1) Paris\n2) Rome\n3) Oslo\n",
        "- Paris\n* Rome\n• Oslo",
        "Here are three cities:\n\n1. Paris\n2. Rome\n3. Oslo\n\nWant more?",
        "Paris\nRome\n\nOslo",
        "Paris, Rome , Oslo",
        "  Paris,Rome,, Oslo.  ".replace(".", ""),
    ],
)
def test_auto_reads_each_way_of_writing_a_list(text: str) -> None:
    assert parsers.ListParser().parse(text) == ["Paris", "Rome", "Oslo"]


def test_a_marker_needs_a_space_after_it_so_numbers_and_bold_stay_items() -> None:
    assert parsers.ListParser().parse("3.5 kg\n**bold**\n-5 degrees") == [
        "3.5 kg",
        "**bold**",
        "-5 degrees",
    ]
    assert parsers.ListParser().parse("1. 3.5 kg\n2. **bold**") == ["3.5 kg", "**bold**"]


def test_each_style_reads_only_its_own_way() -> None:
    text = "Intro, with a comma:\n1. Paris, France\n- Rome\nOslo"
    assert parsers.ListParser("numbered").parse(text) == ["Paris, France"]
    assert parsers.ListParser("bulleted").parse(text) == ["Rome"]
    assert parsers.ListParser("lines").parse(text) == [
        "Intro, with a comma:",
        "Paris, France",
        "Rome",
        "Oslo",
    ]
    assert parsers.ListParser("comma").parse("a, b\nc") == ["a", "b", "c"]
    assert parsers.ListParser("auto").parse(text) == ["Paris, France", "Rome"]


@pytest.mark.parametrize(
    ("style", "text", "expected"),
    [
        ("auto", "", "a list (one item per line, or separated by commas), got an empty reply"),
        ("auto", " , ,\n", "a list (one item per line, or separated by commas), got ' , ,\\n'"),
        ("numbered", "- a\n- b", "a numbered list (lines starting with 1. or 1)), got '- a\\n- b'"),
        ("bulleted", "1. a", "a bulleted list (lines starting with -, * or •), got '1. a'"),
    ],
)
def test_a_reply_without_items_names_the_style_expected(
    style: parsers.ListStyle, text: str, expected: str
) -> None:
    with pytest.raises(parsers.ParseError) as raised:
        parsers.ListParser(style).parse(text)
    assert str(raised.value) == f"ListParser expected {expected} (no item in it)"


def test_streamed_each_partial_is_the_list_when_one_more_item_is_whole() -> None:
    text = "Here you go:\n1. Paris\n2. Rome\n3. Oslo"
    assert partials(parsers.ListParser(), by_character(text)) == [
        ["Paris"],
        ["Paris", "Rome"],
    ]  # the last item is whole only with the whole reply: parse gives it
    assert partials(parsers.ListParser("comma"), by_character("a, b,c")) == [["a"], ["a", "b"]]
    assert partials(parsers.ListParser("lines"), ["x\ny", "\n"]) == [["x"], ["x", "y"]]


def test_auto_holds_lines_without_a_marker_back_since_a_marked_one_may_follow() -> None:
    assert partials(parsers.ListParser(), by_character("Paris\nRome\n")) == []
    assert partials(parsers.ListParser(), by_character("Intro\n- a\n- b\n")) == [["a"], ["a", "b"]]


@given(ITEMS, st.sampled_from(["numbered", "bulleted", "lines", "comma", "auto"]), CUTS)
def test_any_cutting_gives_prefixes_of_the_parsed_list(
    items: list[str], style: parsers.ListStyle, cuts: list[int]
) -> None:
    if style == "comma":
        text = ", ".join(items) + ","
    elif style == "numbered":
        text = "".join(f"{n}. {item}\n" for n, item in enumerate(items, 1))
    else:
        text = "".join(f"- {item}\n" for item in items)
    parser = parsers.ListParser(style)
    whole = parser.parse(text)
    found = partials(parser, pieces(text, cuts))
    assert found[-1] == whole
    assert all(value == whole[: len(value)] for value in found)
    assert [len(value) for value in found] == sorted({len(value) for value in found})


def test_a_long_list_is_copied_a_bounded_number_of_times_per_character() -> None:
    text = "".join(f"- item {n}\n" for n in range(100_000))
    found = partials(parsers.ListParser(), pieces(text, list(range(0, len(text), 5))))
    assert len(found[-1]) > 90_000
    assert sum(map(len, found)) <= 20 * len(text)
    assert len(parsers.ListParser().parse(text)) == 100_000


def test_an_unknown_style_is_refused_naming_the_styles() -> None:
    with pytest.raises(ParserConfigError, match="style must be one of auto, lines, comma"):
        parsers.ListParser("csv")  # type: ignore[arg-type]


def test_instructions_and_output_type() -> None:
    assert "numbered list" in parsers.ListParser("numbered").instructions()
    assert "commas" in parsers.ListParser("comma").instructions()
    assert parsers.ListParser().output_type == list[str]
