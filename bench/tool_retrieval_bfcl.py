"""Tool retrieval on real function definitions: the Berkeley Function Calling Leaderboard's.

Run from the repository root: `python bench/tool_retrieval_bfcl.py` (about ten seconds). It pools
the functions of BFCL's single-turn questions (../shared/benchmarks/bfcl_pooled/
bfcl_tools.jsonl.gz beside the checkout, or the file `--data` names; Apache-2.0, its SOURCE.md
says where it comes from) into one catalog of 2,555 tools, and asks its 2,501 questions, each
with the tools its gold calls name. A question counts as found at k when every tool it needs is
among the first k selected.

The questions are split by a hash of their id into a dev half, which the retriever's weights
were tuned on, and a test half, which they were not; both are printed, for all questions,
for those needing 2+ tools, and for those not in English (mostly Chinese and Korean), beside
a baseline ranking tools by how many distinct words of the question their name and
description share, and the share of all questions for which the very copy of a function
written several times was selected (the namespaced `s3_get_current_weather` its question was
given, where any copy answers it). Then the median time of one selection.

With `--embeddings-model M [--embeddings-base-url URL]` the retriever also ranks by the
embeddings of any OpenAI-compatible endpoint (`llms.OpenAIEmbeddings`; the key comes from
OPENAI_API_KEY) and fuses both rankings; `bench/serve_embeddings.py` serves a local
sentence-transformers model as one.

What the retriever's constants were tuned to, on the dev half (all the tools a question needs
among the 5 selected): `near_copies.NEAR_COPY_SIMILARITY` 83.2 % with no copy moved back,
84.6 % at 0.65, 85.6 % at 0.5; below 0.62, operations of bench/tool_retrieval.py's catalog
that differ only by their verb (`get_travel_insurance`, `book_travel_insurance`: 0.57 alike)
were moved back and fewer of its questions found their tool, so 0.65 keeps a margin.
`near_copies.SAME_OPERATION_SIMILARITY` 0.3: 84.7 % without it, 86.2 % with it (86.3 % at any
likeness, 86.0 % at 0.4). `near_copies.FINGERPRINT_BITS` 512 tells apart 39 in 40 of the
pairs the selections compare that are no copies. `retriever.NAME_WEIGHT` 3: weighting the
description's first sentence more as well did not help. In `bm25`, the early exit's guard (the
terms read able to score 4 times what those left can) ran fewer instructions over these
questions than factors of 2 and 3; and sorting finds the k-th highest score in a fifth of a
heap's time for the median 29 values, a heap a few times faster for 2,000.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.shared_data import shared_benchmark
from chainkit.schema.embedder import Embedder
from chainkit.tools import Tool, ToolRetriever

DATA = "bfcl_pooled/bfcl_tools.jsonl.gz"
"""The pooled BFCL extract, under ../shared/benchmarks/."""
KS = (1, 3, 5, 10)
_WORD = re.compile(r"\w+")
_NAMESPACE = re.compile(r"^s\d+_")


class Defined(Tool):
    """A function definition of the catalog: selected, never called."""

    def __init__(self, name: str, description: str, parameters: dict[str, Any]) -> None:
        self.name, self.description, self._parameters = name, description or name, parameters
        # As an MCPTool's: the name without the namespace the extract gave it.
        self.remote_name = name_of(name)

    @property
    def parameters(self) -> dict[str, Any]:
        return self._parameters

    def call(self, input: str) -> str:
        return self.name


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    gold: tuple[str, ...]

    @property
    def split(self) -> str:
        return "dev" if zlib.crc32(self.id.encode()) % 2 == 0 else "test"

    @property
    def english(self) -> bool:
        letters = [c for c in self.text if c.isalpha()]
        return sum(not c.isascii() for c in letters) <= 0.2 * len(letters)


def load(data: Path) -> tuple[list[Tool], list[Question]]:
    tools: list[Tool] = []
    questions: list[Question] = []
    with gzip.open(data, "rt", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if "tool" in row:
                tools.append(Defined(row["tool"], row["description"], row["parameters"]))
            else:
                questions.append(Question(row["id"], row["question"], tuple(row["gold"])))
    return tools, questions


class WordOverlap:
    """The baseline: tools ranked by how many distinct words (lower-cased) of the question
    their name and description share, ties in catalog order."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._words = [(tool, _words(f"{tool.name} {tool.description}")) for tool in tools]

    def select(self, query: str, k: int = max(KS)) -> list[Tool]:
        asked = _words(query)
        shared = ((len(asked & words), -n, tool) for n, (tool, words) in enumerate(self._words))
        best = sorted((item for item in shared if item[0]), key=lambda i: i[:2], reverse=True)
        return [tool for _, _, tool in best[:k]]


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text.replace("_", " "))}


def found_at(
    select: Callable[[str], list[Tool]],
    questions: Iterable[Question],
    same: Callable[[str], str] | None = None,
) -> dict[int, float]:
    """The share of questions whose tools are all among the first k selected, for each k; a
    tool counts as another when `same` gives both the same name (by default `name_of`)."""
    same = same or name_of
    hits = dict.fromkeys(KS, 0)
    asked = 0
    for question in questions:
        names = [same(tool.name) for tool in select(question.text)]
        asked += 1
        for k in KS:
            hits[k] += {same(name) for name in question.gold} <= set(names[:k])
    return {k: n / asked for k, n in hits.items()} if asked else {}


def name_of(name: str) -> str:
    """A tool's name without the namespace the extract gave it: the 48 `get_current_weather`
    written for different questions (`s0_get_current_weather`, ...) are one operation, and any
    of them answers a question about the weather."""
    return _NAMESPACE.sub("", name)


def groups(questions: Sequence[Question], split: str) -> dict[str, list[Question]]:
    chosen = [q for q in questions if q.split == split]
    return {
        "all": chosen,
        "2+ tools": [q for q in chosen if len(q.gold) >= 2],
        "not English": [q for q in chosen if not q.english],
    }


def report(
    tools: Sequence[Tool],
    questions: Sequence[Question],
    splits: Sequence[str],
    embedder: Embedder | None,
) -> None:
    retriever = ToolRetriever(tools, top_k=max(KS), embedder=embedder)
    rankers = (("ToolRetriever", retriever.select), ("word overlap", WordOverlap(tools).select))
    for split in splits:
        for label, chosen in groups(questions, split).items():
            for name, select in rankers:
                rates = found_at(select, chosen)
                print(
                    f"  {split:<4} {label:<12} {len(chosen):4} questions  {name:<13} "
                    + "  ".join(f"R@{k} {rates[k]:6.1%}" for k in KS)
                )
        # Where one name has several texts, the very copy the question was given.
        rates = found_at(retriever.select, groups(questions, split)["all"], str)
        print(
            f"  {split:<4} {'exact copy':<12} {'':14} {'ToolRetriever':<13} "
            + "  ".join(f"R@{k} {rates[k]:6.1%}" for k in KS)
        )


def misses(retriever: ToolRetriever, questions: Sequence[Question], count: int) -> None:
    """Prints the first `count` dev questions whose tools are not all among the 5 `retriever`
    selects."""
    for question in questions:
        if count <= 0:
            return
        names = [name_of(tool.name) for tool in retriever.select(question.text)]
        if question.split == "dev" and not {name_of(n) for n in question.gold} <= set(names):
            count -= 1
            print(f"miss {question.id}: {question.text[:150]!r}")
            print(f"  needs {list(question.gold)}\n  got   {names}")


def selection_time(retriever: ToolRetriever, texts: Sequence[str]) -> list[float]:
    retriever.select("")  # brings the index up to date
    times = []
    for text in texts:
        for _ in range(3):
            start = time.perf_counter()
            retriever.select(text)
            times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test", "both"), default="both")
    parser.add_argument("--misses", type=int, default=0, help="print this many dev misses at 5")
    parser.add_argument("--embeddings-model", help="rank by this model's embeddings too")
    parser.add_argument("--embeddings-base-url", help="its OpenAI-compatible base URL")
    parser.add_argument(
        "--data", type=Path, help=f"the catalog (default ../shared/benchmarks/{DATA})"
    )
    args = parser.parse_args()
    try:
        tools, questions = load(args.data or shared_benchmark(DATA))
    except FileNotFoundError as missing:  # shared_benchmark's, or that of --data
        sys.exit(f"{Path(__file__).name}: {missing}")
    print(f"catalog: {len(tools)} tools; {len(questions)} questions (all needed tools among k)")
    embedder: Embedder | None = None
    if args.embeddings_model:
        from chainkit.llms import OpenAIEmbeddings

        embedder = OpenAIEmbeddings(args.embeddings_model, base_url=args.embeddings_base_url)
        print(f"embedder: {args.embeddings_model} at {args.embeddings_base_url or 'OpenAI'}")
    splits = ("dev", "test") if args.split == "both" else (args.split,)
    report(tools, questions, splits, embedder)
    retriever = ToolRetriever(tools, top_k=5, embedder=embedder)
    misses(retriever, questions, args.misses)
    times = selection_time(retriever, [question.text for question in questions[::5]])
    print(
        f"select (top_k=5) among {len(tools)} tools: median {statistics.median(times) * 1e6:.0f}"
        f" µs over {len(times)} selections"
    )


if __name__ == "__main__":
    main()
