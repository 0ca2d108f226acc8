"""The texts every error message and log line writes the same way (chainkit._text)."""

from chainkit._text import counted, one_line, quoted


def test_counts_take_their_noun_in_the_singular_for_one_only():
    assert counted(1, "run") == "1 run"
    assert counted(0, "run") == "0 runs"
    assert counted(2, "reply") == "2 replies"
    assert counted(2, "day") == "2 days"
    assert counted(1234, "tool call") == "1,234 tool calls"


def test_a_quote_is_a_literal_of_the_shortened_text():
    assert quoted("it's", 10) == '"it\'s"'
    assert quoted("abcdef", 4) == "'abc…'"


def test_one_line_escapes_breaks_and_controls_and_cuts_in_the_middle():
    assert one_line("a\nb\\c\r\x1b[31m\u2028", 0) == "a\\nb\\\\c\\r\\x1b[31m\\u2028"
    assert one_line("0123456789", 4) == "01…[6 characters cut]…89"
