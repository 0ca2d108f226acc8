"""bench/compare.py reads the figures of any benchmark's output, as each prints them."""

from __future__ import annotations

from bench.compare import figures, report

OPENAI_OVERHEAD = """\
2000 non-streaming requests each, interleaved, loopback server
  bare openai client : median    612.0 µs/request
  chainkit OpenAI    : median    650.5 µs/request
  overhead           :    +38.5 µs/request (+6.3%)
"""

CONCURRENCY = """\
3-call ReAct runs, 100 ms per reply, median of 3 rounds (runs/s); LangChain not installed
     N |   bare SDK |   chainkit | chainkit/bare | server CPU
     1 |        3.2 |        3.1 |          0.97 |        1%
   100 |      310.0 |      290.0 |          0.94 |       20%
"""


def test_each_figure_is_named_by_its_line_not_only_the_first_median() -> None:
    found = figures(OPENAI_OVERHEAD)
    assert found[("chainkit OpenAI : median # µs/request", 0, 0, "lower")] == 650.5
    assert found[("bare openai client : median # µs/request", 0, 0, "lower")] == 612.0
    assert found[("overhead : # µs/request (#%)", 0, 1, "lower")] == 6.3


def test_table_rows_are_told_apart_by_their_place_and_rates_are_better_higher() -> None:
    found = figures(CONCURRENCY)
    row = "# | # | # | # | #%"
    assert found[(row, 0, 2, "unknown")] == 3.1
    assert found[(row, 1, 2, "unknown")] == 290.0
    assert found[(row, 1, 4, "lower")] == 20.0
    header = (
        "#-call ReAct runs, # ms per reply, median of # rounds (runs/s); LangChain not installed"
    )
    assert found[(header, 0, 1, "lower")] == 100.0
    assert figures("peak 12.5 runs/s")[("peak # runs/s", 0, 0, "higher")] == 12.5


def test_numbers_inside_words_are_no_figures() -> None:
    found = figures("CVE-2024-58340 input, gpt-4o, p90 2.5 µs, 1,000,000 lines")
    assert list(found.values()) == [2.5, 1_000_000.0]


def test_report_leaves_out_labels_and_says_which_side_is_better() -> None:
    old = figures("6 calls: median 100.0 µs/run; rate 50.0 runs/s")
    new_rounds = [
        figures("6 calls: median 90.0 µs/run; rate 55.0 runs/s"),
        figures("6 calls: median 95.0 µs/run; rate 45.0 runs/s"),
    ]
    lines = report([(old, new) for new in new_rounds])
    assert len(lines) == 2  # "6 calls" is the same everywhere: a label
    assert lines[0].startswith("# calls: median @ µs/run; rate # runs/s\n")
    assert "median -7.5 (-7.5%)" in lines[0]
    assert "new better (lower is better) in 2 of 2 rounds" in lines[0]
    assert "new better (higher is better) in 1 of 2 rounds" in lines[1]


def test_report_leaves_out_a_figure_one_output_lacks() -> None:
    old = figures("median 1.0 µs\nonly old 3.0 µs")
    new = figures("median 2.0 µs")
    assert report([(old, new)]) == [
        "median @ µs\n    old median 1, new median 2; new - old per round: median +1 (+100.0%), "
        "mean +1; new better (lower is better) in 0 of 1 rounds"
    ]
