"""What `indexes.SQLIndex` costs: indexing `--chunks` chunks of about 80 words (words drawn
from a Zipf-like vocabulary, so that BM25 meets common and rare terms as in real text) into a
SQLite file (and PostgreSQL given `--postgres DSN`) without embedding time, with vectors of
`--dimensions` and without any (a lexical-only index); then a keyword query's median, the
first keyword search's load time and the memory the BM25 engine takes; then a dense query's
median and its first search's load time (numpy's scan when installed, else pure Python's;
`--no-numpy` hides numpy)."""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit.documents import Document
from chainkit.indexes import SQLIndex
from chainkit.indexes._matrix import numpy_scan

BATCH = 1_000
"""Chunks written per upsert: each is one transaction."""


def resident_mb() -> float:
    """This process's resident memory (Linux), in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def corpus(count: int, seed: int = 7) -> list[Document]:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(3, 10))) for _ in range(30_000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    return [
        Document(
            " ".join(rng.choices(vocabulary, weights, k=80)),
            {"source": f"file{i // 20}.md", "part": i % 4},
            id=f"chunk-{i}",
        )
        for i in range(count)
    ]


def random_vectors(count: int, dimensions: int, seed: int = 11) -> list[list[float]]:
    rng = random.Random(seed)
    return [[rng.random() - 0.5 for _ in range(dimensions)] for _ in range(count)]


def median_ms(call: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def index_rate(where: str, documents: list[Document], vectors: list[list[float]] | None) -> str:
    index = SQLIndex(where, table=f"bench_{uuid.uuid4().hex[:8]}")
    started = time.perf_counter()
    for start in range(0, len(documents), BATCH):
        part = documents[start : start + BATCH]
        index.upsert(part, None if vectors is None else vectors[start : start + BATCH])
    seconds = time.perf_counter() - started
    index.close()
    return f"{len(documents) / seconds:,.0f} chunks/s"


def searches(index: SQLIndex, documents: list[Document], vectors: list[list[float]]) -> None:
    rng = random.Random(3)
    queries = [" ".join(rng.sample(rng.choice(documents).text.split(), 4)) for _ in range(200)]
    before, started = resident_mb(), time.perf_counter()
    index.keyword_search(queries[0])
    load = time.perf_counter() - started
    taken = resident_mb() - before
    each = iter(queries * 2)
    fresh = median_ms(lambda: index.keyword_search(next(each), k=10), len(queries))
    again = median_ms(lambda: index.keyword_search(next(each), k=10), len(queries))
    print(
        f"  keyword query {fresh:.2f} ms median (k=10; {again:.2f} ms asked again, its terms "
        f"scored already); first search loads the terms in {load:.2f} s, +{taken:.0f} MB "
        "resident"
    )
    each = iter(queries)
    filtered = median_ms(lambda: index.keyword_search(next(each), k=10, where={"part": 1}), 20)
    print(f"  keyword query with a filter (a quarter of the chunks): {filtered:.1f} ms median")
    started = time.perf_counter()
    index.search(vectors[0])
    load = time.perf_counter() - started
    engine = "numpy" if numpy_scan() else "pure Python"
    queries_v = iter(vectors * 2)
    dense = median_ms(lambda: index.search(next(queries_v), k=10), 20 if numpy_scan() else 3)
    print(f"  dense query ({engine}) {dense:.1f} ms median; first search loads in {load:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", default="5000,100000", help="sizes, comma-separated")
    parser.add_argument("--dimensions", type=int, default=384)
    parser.add_argument("--postgres", default=None, help="a DSN: PostgreSQL beside SQLite")
    parser.add_argument("--no-numpy", action="store_true", help="scan in pure Python")
    args = parser.parse_args()
    if args.no_numpy:
        sys.modules["numpy"] = None  # type: ignore[assignment]  # import numpy fails
    for count in (int(size) for size in args.chunks.split(",")):
        documents = corpus(count)
        vectors = random_vectors(count, args.dimensions)
        with tempfile.TemporaryDirectory() as folder:
            places = {"SQLite": os.path.join(folder, "index.db")}
            if args.postgres:
                places["PostgreSQL"] = args.postgres
            for name, where in places.items():
                print(f"{count:,} chunks, {name}:")
                print(f"  indexing without vectors {index_rate(where, documents, None)}")
                table = f"bench_{uuid.uuid4().hex[:8]}"
                index = SQLIndex(where, table=table)
                started = time.perf_counter()
                for start in range(0, count, BATCH):
                    index.upsert(documents[start : start + BATCH], vectors[start : start + BATCH])
                rate = count / (time.perf_counter() - started)
                print(f"  indexing with {args.dimensions}-d vectors {rate:,.0f} chunks/s")
                searches(index, documents, vectors)
                index.close()


if __name__ == "__main__":
    main()
