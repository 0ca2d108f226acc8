"""What a streamed typed result costs as its reply grows: `llms.generate_object` with
`on_partial`, a scripted model streaming a list of orders in 4-character chunks. Run:

    python bench/bench_structured_stream.py [--sizes 2.5 5 10 40] [--repeat 3] [--typed]

With `--typed` the partials are built into the type (`typed_partials=True`). It prints, per
reply size in KB, the best of `--repeat` calls in milliseconds, the partial values handed on,
and the milliseconds per KB (flat when the cost is linear in the reply).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit import llms


@dataclass
class Line:
    product: str
    note: str
    quantity: int


@dataclass
class Order:
    lines: list[Line]
    status: str


def reply_of(kilobytes: float) -> str:
    """An Order's JSON of about `kilobytes` KB."""
    lines: list[dict[str, object]] = []
    while len(json.dumps({"lines": lines})) < kilobytes * 1024:
        lines.append({"product": f"item {len(lines)}", "note": "fragile, é ✓", "quantity": 2})
    return json.dumps({"lines": lines, "status": "open"})


def one_call(reply: str, typed: bool) -> tuple[float, int]:
    partials: list[object] = []
    llm = llms.FakeLLM([reply], chunk_size=4)
    start = time.perf_counter()
    order = llms.generate_object(llm, "Go", Order, on_partial=partials.append, typed_partials=typed)
    elapsed = time.perf_counter() - start
    assert order.status == "open"
    return elapsed, len(partials)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[2.5, 5, 10, 40])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--typed", action="store_true")
    args = parser.parse_args()
    for kilobytes in args.sizes:
        reply = reply_of(kilobytes)
        runs = [one_call(reply, args.typed) for _ in range(args.repeat)]
        best = min(elapsed for elapsed, _ in runs) * 1000
        print(
            f"{kilobytes:6.1f} KB: {best:9.1f} ms, {runs[0][1]:5d} partials, "
            f"{best / kilobytes:7.2f} ms per KB"
        )


if __name__ == "__main__":
    main()
