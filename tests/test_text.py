"""The texts every error message and log line writes the same way (chainkit._text)."""

from chainkit._text import counted, one_line, quoted, visible


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


def test_one_line_escapes_what_would_hide_or_reorder_text():
    assert one_line("a\u200bb\u200fc\ufeffd\u2066e\u061cf", 0) == (
        "a\\u200bb\\u200fc\\ufeffd\\u2066e\\u061cf"
    )
    assert one_line("\ud800 \udcff", 0) == "\\ud800 \\udcff"


def test_visible_escapes_invisible_characters_and_keeps_the_rest():
    assert visible("invoice\u202efdp.exe") == "invoice\\u202efdp.exe"
    assert visible("\x00\u200d\ud800\U000e0001\n") == "\\u0000\\u200d\\ud800\\u{e0001}\\u000a"
    assert visible("日本語 🙂 é\t") == "日本語 🙂 é\\u0009"
