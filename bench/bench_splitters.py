"""How fast documents split, and that the cost stays linear: RecursiveSplitter over generated
English prose, Chinese prose and Markdown of 1 MB and 10 MB. Run:

    python bench/bench_splitters.py [--megabytes 10] [--repeat 3]

Each line gives the best of N runs in MB/s (UTF-8 megabytes of input), the chunks made, and
the characters measured per character of input with a counting length function (a quadratic
splitter would measure each chunk again for every piece joined into it).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit.documents import RecursiveSplitter

ENGLISH = (
    "The ferry to the islands leaves the north pier every hour. Tickets are sold at the kiosk, "
    "and on board when the kiosk is closed; children under five travel free. "
)
CHINESE = (
    "渡轮每小时从北码头出发。船票在售票亭出售，售票亭关闭时可以在船上购买。五岁以下儿童免费乘船！"
)
MARKDOWN = "## Timetable\n\n" + ENGLISH * 3 + "\n\n- first item\n- second item\n\n"


def text_of(unit: str, megabytes: float, paragraph: int) -> str:
    """About `megabytes` of `unit` repeated, a blank line after each `paragraph` repeats (0:
    one paragraph; its sentences and words are then what the splitter cuts at)."""
    repeats = int(megabytes * 1_000_000) // len(unit.encode("utf-8")) + 1
    if not paragraph:
        return unit * repeats
    return (unit * paragraph + "\n\n") * (repeats // paragraph + 1)


def best_seconds(splitter: RecursiveSplitter, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _chunk in splitter.split_text(text):
            pass
        times.append(time.perf_counter() - start)
    return min(times)


def measured_per_character(splitter_of: Callable[..., RecursiveSplitter], text: str) -> float:
    measured = 0

    def counting(piece: str) -> int:
        nonlocal measured
        measured += len(piece)
        return len(piece)

    list(splitter_of(1000, 100, length=counting).split_text(text))
    return measured / len(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    arguments = parser.parse_args()
    cases: list[tuple[str, str, int, Callable[..., RecursiveSplitter]]] = [
        ("English prose", ENGLISH, 5, RecursiveSplitter),
        ("English, no paragraphs", ENGLISH, 0, RecursiveSplitter),
        ("Chinese prose", CHINESE, 5, RecursiveSplitter),
        ("Chinese, no paragraphs", CHINESE, 0, RecursiveSplitter),
        ("Markdown", MARKDOWN, 1, RecursiveSplitter.markdown),
    ]
    for megabytes in sorted({1.0, arguments.megabytes}):
        for name, unit, paragraph, splitter_of in cases:
            text = text_of(unit, megabytes, paragraph)
            size = len(text.encode("utf-8")) / 1_000_000
            splitter = splitter_of(1000, 100)
            chunks = len(list(splitter.split_text(text)))
            seconds = best_seconds(splitter, text, arguments.repeat)
            ratio = measured_per_character(splitter_of, text)
            print(
                f"{name:22} {size:5.1f} MB  {size / seconds:6.1f} MB/s  {chunks:7} chunks  "
                f"{ratio:4.1f} characters measured per character"
            )


if __name__ == "__main__":
    main()
