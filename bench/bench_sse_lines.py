"""What the OpenAI backend's event-stream decoder costs for one event sent in many `data:`
lines (a server that pretty-prints its JSON), at about 2.5, 10, 40 and 160 KB. Run from the
repository root:

    python bench/bench_sse_lines.py

Each size is one event in one line per JSON value or bracket, about 18 bytes a line. It
prints milliseconds per event, best of three. Deciding at each line whether the lines so far
are already whole JSON by parsing them all again cost the square of the event (160 KB: about
6 s on a loaded machine); read line by line it is linear.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit.llms.openai._sse import SSEDecoder

SIZES_KB = (2.5, 10, 40, 160)


def event_body(size: int) -> bytes:
    """One event of about `size` bytes, its JSON pretty-printed over many data lines."""
    chunk = {"choices": [{"index": 0, "delta": {"content": "x" * 8}}] * (size // 105)}
    lines = json.dumps(chunk, indent=1).split("\n")
    return ("".join(f"data: {line}\n" for line in lines) + "\n").encode()


def best_ms(body: bytes, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        decoder = SSEDecoder()
        events = decoder.feed(body) + decoder.close()
        times.append(time.perf_counter() - start)
        assert len(events) == 1
    return min(times) * 1000


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    for kb in SIZES_KB:
        body = event_body(int(kb * 1000))
        lines = body.count(b"data:")
        print(f"{len(body) / 1000:>6.1f} KB, {lines:>5} data lines: {best_ms(body):8.1f} ms")


if __name__ == "__main__":
    main()
