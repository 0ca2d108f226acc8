"""What `llms.CachedEmbeddings` costs when every text is cached (re-indexing an unchanged
folder): `--texts` chunks of about 500 characters with vectors of `--dimensions`, looked up
in memory and in a SQLite file (and PostgreSQL given `--postgres DSN`), beside the first run
that fills the cache from an instant embedder."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit.llms import CachedEmbeddings, InMemoryEmbeddingCache, SQLEmbeddingCache
from chainkit.llms.embedding_cache import EmbeddingCache


class Instant:
    """An embedder that costs nothing, so that the figures are the cache's alone."""

    model = "instant"

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[float(len(text) % 7)] * self.dimensions for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def timed_runs(cache: EmbeddingCache, texts: list[str], dimensions: int, repeat: int) -> str:
    cached = CachedEmbeddings(Instant(dimensions), cache, batch_size=512)
    started = time.perf_counter()
    cached.embed_documents(texts)
    fill = time.perf_counter() - started
    hits = []
    for _ in range(repeat):
        started = time.perf_counter()
        cached.embed_documents(texts)
        hits.append(time.perf_counter() - started)
    return f"fill {fill:.2f} s, all cached {statistics.median(hits):.2f} s (median of {repeat})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=10_000)
    parser.add_argument("--dimensions", type=int, default=384)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", default=os.environ.get("CHAINKIT_TEST_POSTGRES_DSN"))
    args = parser.parse_args()
    texts = [f"chunk {i}: " + "lorem ipsum dolor sit amet " * 18 for i in range(args.texts)]
    print(f"{args.texts:,} texts, {args.dimensions} dimensions")
    memory = InMemoryEmbeddingCache(max_entries=max(args.texts, 1))
    print("memory:", timed_runs(memory, texts, args.dimensions, args.repeat))
    with tempfile.TemporaryDirectory() as folder:
        sqlite = SQLEmbeddingCache(Path(folder) / "vectors.db")
        print("SQLite:", timed_runs(sqlite, texts, args.dimensions, args.repeat))
        sqlite.close()
    if args.postgres:
        postgres = SQLEmbeddingCache(args.postgres)
        postgres.clear()
        print("PostgreSQL:", timed_runs(postgres, texts, args.dimensions, args.repeat))
        postgres.clear()
        postgres.close()


if __name__ == "__main__":
    main()
