"""How fast documents split, and that the cost stays linear: RecursiveSplitter over generated
English prose, Chinese prose and Markdown of 1 MB and 10 MB; and how fast a folder of small
files loads and splits. Run:

    python bench/bench_splitters.py [--megabytes 10] [--repeat 3] [--files 10000]

Each splitting line gives the best of N runs in MB/s (UTF-8 megabytes of input), the chunks
made, and the characters measured per character of input with a counting length function (a
quadratic splitter would measure each chunk again for every piece joined into it). The last
line loads `--files` Markdown notes of about 1 KB from a temporary folder with DirectoryLoader
(100 to a subfolder) and splits them into chunks of 500 characters.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit.documents import DirectoryLoader, RecursiveSplitter

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


def folder_figures(files: int) -> str:
    with tempfile.TemporaryDirectory() as folder:
        for number in range(files):
            path = Path(folder, f"part{number // 100}", f"note{number}.md")
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"# Note {number}\n\n" + ENGLISH * 6, encoding="utf-8")
        start = time.perf_counter()
        documents = list(DirectoryLoader(folder))
        loaded = time.perf_counter() - start
        start = time.perf_counter()
        chunks = list(RecursiveSplitter(500, 50).split(documents))
        split = time.perf_counter() - start
    return (
        f"a folder of {len(documents):,} files: loaded in {loaded:.2f} s "
        f"({len(documents) / loaded:,.0f} files/s), split into {len(chunks):,} chunks in "
        f"{split:.2f} s ({len(chunks) / split:,.0f} chunks/s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files", type=int, default=10_000)
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
    print(folder_figures(arguments.files))


if __name__ == "__main__":
    main()
