"""What `callbacks.FinalAnswerStream` costs to follow an agent's final answer as it streams, at
2.5, 10, 40 and 160 KB, in tokens of 4 characters. Run from the repository root:

    python bench/bench_final_answer.py [--rounds N] [--full]

Two answers: prose in lines of about 80 characters, and the same with a fenced code block every
4 KB (each fence line is read with the reply so far). Each is timed two ways: through
FinalAnswerStream, and reading the whole reply so far at each token with `settled_answer`, as
FinalAnswerStream did before it read replies as they come (the cost that grows with the square
of the reply). It prints milliseconds per answer (best of the rounds) and checks that both ways
settle the same answer. Reading whole at every token takes about a minute for the answer with
code at 160 KB: it is timed with `--full` only.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit._mrkl import settled_answer
from chainkit.callbacks import Event, FinalAnswerStream

SIZES_KB = (2.5, 10, 40, 160)
TOKEN = 4
LINE = "The answer follows from the figures above, each checked against the source. "
CODE_BLOCK = "```python\nprint('Observation: not a keyword inside code')\n```\n"


def prose(size: int) -> str:
    lines = (LINE[: 60 + n % 20] + "\n" for n in range(size // 60 + 1))
    return "".join(lines)[:size]


def with_code(size: int) -> str:
    text = prose(size)
    return "".join(text[at : at + 4000] + CODE_BLOCK for at in range(0, size, 4000))[:size]


def reply_events(answer: str) -> list[Event]:
    reply = "Thought: I have what I need.\nFinal Answer: " + answer
    tokens = (reply[at : at + TOKEN] for at in range(0, len(reply), TOKEN))
    return [Event("token", "llm", "agent", "llm", "m", {"text": t}, 0.0) for t in tokens]


def streamed(events: list[Event]) -> str:
    return "".join(piece for piece in FinalAnswerStream(events) if isinstance(piece, str))


def reread(events: list[Event]) -> str:
    """The answer settled at the last token, the reply read whole at every token."""
    reply, settled = "", None
    for event in events:
        reply += event.data["text"]
        settled = settled_answer(reply)
    return settled or ""


def best_ms(read: Callable[[list[Event]], str], events: list[Event], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        read(events)
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="re-read the code answer at 160 KB")
    arguments = parser.parse_args()
    rounds = arguments.rounds
    print(f"{'answer':<10} {'KB':>6} {'re-read whole (before)':>24} {'as it comes (now)':>20}")
    for name, make in (("prose", prose), ("with code", with_code)):
        for kb in SIZES_KB:
            events = reply_events(make(int(kb * 1000)))
            now = best_ms(streamed, events, rounds)
            if kb > 100 and make is with_code and not arguments.full:
                print(f"{name:<10} {kb:>6} {'(with --full)':>24} {now:>17.1f} ms")
                continue
            assert streamed(events) == reread(events)
            before = best_ms(reread, events, rounds if kb < 100 else 1)
            print(f"{name:<10} {kb:>6} {before:>21.1f} ms {now:>17.1f} ms")


if __name__ == "__main__":
    main()
