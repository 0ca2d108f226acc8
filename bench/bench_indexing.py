"""Incremental indexing of a generated folder of `--documents` text files (about 1,500
characters each, in 100 subfolders) with `indexes.index_documents` (chunks of 1,000
characters, overlap 100): the first run into a fresh SQLite file by terms only and with
vectors (an instant embedder, its time left out), into an `InMemoryIndex`; a run over the
folder unchanged; a run after 1 % of the files changed; with `--postgres DSN`, a first run and
an unchanged one into PostgreSQL. Each run is a process of its own, so its peak memory (RSS)
is its own.

With `--langchain PYTHON` (an interpreter where `pip install langchain-community
langchain-text-splitters rank_bm25 greenlet` was run), the same folder through LangChain's
indexing API (`index` with a SQLite `SQLRecordManager` into an `InMemoryVectorStore` with an instant
embedder, cleanup="full"), first run and unchanged, and `BM25Retriever.from_documents` on the
same chunks, in that interpreter."""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DIMENSIONS = 384
CHUNK_SIZE, OVERLAP = 1000, 100


class Instant:
    """An embedder that costs almost nothing and counts the time it took, so that a run's
    figure can leave embedding out."""

    model = "instant"

    def __init__(self) -> None:
        rng = random.Random(7)
        self._vectors = [[rng.uniform(-1, 1) for _ in range(DIMENSIONS)] for _ in range(64)]
        self.seconds = 0.0

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        vectors = [self._vectors[len(text) % 64] for text in texts]
        self.seconds += time.perf_counter() - started
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def make_folder(root: Path, documents: int) -> None:
    """`documents` files of generated prose, 3 paragraphs of about 500 characters each."""
    rng = random.Random(42)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "da", "pe", "gu", "ho"]
    words = sorted({"".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(8000)})
    weights = [1 / (rank + 1) for rank in range(len(words))]  # Zipf, as words in prose are
    for number in range(documents):
        paragraphs = []
        for _ in range(3):
            sentences, size = [], 0
            while size < 500:
                sentence = " ".join(rng.choices(words, weights, k=rng.randint(6, 14)))
                sentences.append(sentence.capitalize() + ".")
                size += len(sentence) + 2
            paragraphs.append(" ".join(sentences))
        folder = root / f"part{number % 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"doc{number:05d}.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")


def change_some(root: Path, share: float) -> int:
    files = sorted(root.rglob("*.txt"))
    changed = files[:: max(1, round(1 / share))]
    for file in changed:
        file.write_text(file.read_text(encoding="utf-8") + "\n\nAn added line.", encoding="utf-8")
    return len(changed)


def run_phase(folder: str, db: str, store: str) -> dict[str, object]:
    """One indexing run in this process: its counts, seconds and peak memory."""
    from chainkit.documents import DirectoryLoader, RecursiveSplitter
    from chainkit.indexes import InMemoryIndex, SQLIndex, index_documents

    embedder = Instant() if store.endswith("vectors") else None
    index: InMemoryIndex | SQLIndex
    if store.startswith("memory"):
        index = InMemoryIndex(embedder)
    else:
        index = SQLIndex(db, embedder, table="bench_indexing")
        if store.startswith("postgres-fresh"):  # what an earlier run of the benchmark left
            index.delete_sources(list(index.source_hashes()))
    started, cpu_started = time.perf_counter(), time.process_time()
    result = index_documents(
        DirectoryLoader(folder, "**/*.txt"), index, splitter=RecursiveSplitter(CHUNK_SIZE, OVERLAP)
    )
    embedding = embedder.seconds if embedder else 0.0
    return {
        "seconds": time.perf_counter() - started - embedding,
        "cpu_seconds": time.process_time() - cpu_started - embedding,
        "added": result.added,
        "updated": result.updated,
        "skipped": result.skipped,
        "deleted": result.deleted,
        "chunks": result.chunks_written,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def langchain_phase(folder: str, db: str) -> dict[str, object]:
    """The same folder through LangChain's indexing API, unchanged once, and BM25Retriever."""
    from langchain_classic.indexes import SQLRecordManager
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document
    from langchain_core.indexing import index
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    class LangChainInstant:  # what InMemoryVectorStore calls of an Embeddings
        def __init__(self) -> None:
            self.inner = Instant()

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return self.inner.embed_documents(texts)

        def embed_query(self, text: str) -> list[float]:
            return self.inner.embed_query(text)

    def documents() -> list[Document]:
        splitter = RecursiveCharacterTextSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=OVERLAP)
        loaded = [
            Document(path.read_text(encoding="utf-8"), metadata={"source": str(path)})
            for path in sorted(Path(folder).rglob("*.txt"))
        ]
        chunks: list[Document] = splitter.split_documents(loaded)
        return chunks

    embeddings = LangChainInstant()
    store = InMemoryVectorStore(embeddings)
    manager = SQLRecordManager("bench", db_url=f"sqlite:///{db}")
    manager.create_schema()
    figures: dict[str, object] = {}
    for run in ("first", "unchanged"):
        embeddings.inner.seconds = 0.0
        started, cpu_started = time.perf_counter(), time.process_time()
        counts = index(documents(), manager, store, cleanup="full", source_id_key="source")
        figures[run] = {
            "seconds": time.perf_counter() - started - embeddings.inner.seconds,
            "cpu_seconds": time.process_time() - cpu_started - embeddings.inner.seconds,
            **counts,
        }
    chunks = documents()
    cpu_started = time.process_time()
    BM25Retriever.from_documents(chunks)
    figures["bm25_build_cpu_seconds"] = time.process_time() - cpu_started
    figures["chunks"] = len(chunks)
    figures["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


def in_process(python: str, *argv: str) -> dict[str, object]:
    done = subprocess.run(
        [python, __file__, *argv], capture_output=True, text=True, check=False, timeout=3600
    )
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr}")
    figures: dict[str, object] = json.loads(done.stdout)
    return figures


def shown(label: str, figures: dict[str, object]) -> str:
    seconds = float(figures["seconds"])  # type: ignore[arg-type]
    cpu = float(figures["cpu_seconds"])  # type: ignore[arg-type]
    chunks = int(figures["chunks"])  # type: ignore[call-overload]
    rate = (
        f" ({chunks / seconds:,.0f} chunks/s; {chunks / cpu:,.0f} per CPU second)" if chunks else ""
    )
    counts = "/".join(str(figures[key]) for key in ("added", "updated", "deleted", "skipped"))
    return (
        f"{label:<40} {seconds:6.2f} s, CPU {cpu:5.2f} s{rate}; "
        f"added/updated/deleted/skipped {counts}; "
        f"peak {float(figures['peak_mb']):,.0f} MB"  # type: ignore[arg-type]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--langchain", metavar="PYTHON", help="an interpreter with LangChain")
    parser.add_argument(
        "--postgres", metavar="DSN", help="also into PostgreSQL (its table bench_indexing)"
    )
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase == "langchain":
        print(json.dumps(langchain_phase(args.folder, args.db)))
        return
    if args.phase:
        print(json.dumps(run_phase(args.folder, args.db, args.phase)))
        return
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp, "docs")
        make_folder(folder, args.documents)
        size = sum(path.stat().st_size for path in folder.rglob("*.txt"))
        print(
            f"{args.documents:,} files, {size / 1e6:.1f} MB; "
            f"chunks of {CHUNK_SIZE}, overlap {OVERLAP}"
        )
        for label, db, phase in [
            ("SQLite, terms only: first run", "terms.db", "sqlite"),
            ("SQLite, terms only: unchanged", "terms.db", "sqlite"),
            ("SQLite, with 384-d vectors: first run", "vectors.db", "sqlite-vectors"),
            ("SQLite, with 384-d vectors: unchanged", "vectors.db", "sqlite-vectors"),
            ("InMemoryIndex, with 384-d vectors", "", "memory-vectors"),
        ]:
            where = str(Path(temp, db)) if db else ""
            figures = in_process(
                sys.executable, "--folder", str(folder), "--db", where, "--phase", phase
            )
            print(shown(label, figures))
        changed = change_some(folder, 0.01)
        terms_db = str(Path(temp, "terms.db"))
        figures = in_process(
            sys.executable, "--folder", str(folder), "--db", terms_db, "--phase", "sqlite"
        )
        print(shown(f"SQLite, terms only: {changed} files changed", figures))
        if args.postgres:
            for label, phase in [
                ("PostgreSQL, terms only: first run", "postgres-fresh"),
                ("PostgreSQL, terms only: unchanged", "postgres"),
            ]:
                argv = ["--folder", str(folder), "--db", args.postgres, "--phase", phase]
                print(shown(label, in_process(sys.executable, *argv)))
        if args.langchain:
            print_langchain(args.langchain, folder, str(Path(temp, "langchain.db")))


def print_langchain(python: str, folder: Path, db: str) -> None:
    figures = in_process(python, "--folder", str(folder), "--db", db, "--phase", "langchain")
    print(f"LangChain, {figures['chunks']:,} chunks (its RecursiveCharacterTextSplitter):")
    for run in ("first", "unchanged"):
        run_figures = figures[run]
        assert isinstance(run_figures, dict)
        seconds, cpu = run_figures.pop("seconds"), run_figures.pop("cpu_seconds")
        label = f"index() + SQLRecordManager + InMemoryVectorStore: {run}"
        print(f"  {label:<60} {seconds:6.2f} s, CPU {cpu:5.2f} s; {run_figures}")
    bm25 = float(figures["bm25_build_cpu_seconds"])  # type: ignore[arg-type]
    print(f"  {'BM25Retriever.from_documents':<60} CPU {bm25:5.2f} s")
    print(f"  peak {float(figures['peak_mb']):,.0f} MB")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
