"""index_documents: a real folder indexed again adds what is new, updates what changed, deletes
what is gone (within the folder indexed) and skips the rest; a change of splitter or embedder
indexes again; chunks are embedded in batches through a real endpoint, the unchanged ones from
the cache; a run that fails part way deletes nothing; wrong input is named."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainkit.documents import DirectoryLoader, Document, MarkdownHeaderSplitter, RecursiveSplitter
from chainkit.documents.errors import LoadError
from chainkit.indexes import (
    IndexingResult,
    InMemoryIndex,
    SourceReplacement,
    SQLIndex,
    aindex_documents,
    index_documents,
)
from chainkit.indexes.errors import IndexConfigError, IndexTypeError
from chainkit.llms import CachedEmbeddings, OpenAIEmbeddings
from tests.support.folders import write
from tests.support.openai_server import TEST_API_KEY, OpenAIServer

PARAGRAPHS = "The lighthouse keeper woke early.\n\nShips passed in the fog.\n\nThe bell rang twice."


def counts(result: IndexingResult) -> tuple[int, int, int, int]:
    return result.added, result.updated, result.deleted, result.skipped


def contents(index: InMemoryIndex) -> dict[str, tuple[str, dict[str, object]]]:
    """Every document the index holds, by id: its text and metadata."""
    sources = index.source_hashes()
    found = index.keyword_search  # every document holds a word from its source's name
    held: dict[str, tuple[str, dict[str, object]]] = {}
    for source in sources:
        for hit in found(Path(source).stem, k=1000, where={"source": source}):
            held[hit.document.id] = (hit.document.text, dict(hit.document.metadata))
    return held


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    write(
        root,
        {
            "alpha.md": "# alpha\n\nalpha first version",
            "beta.txt": "beta stays the same",
            "nested/gamma.txt": "gamma will be deleted",
        },
    )
    return root


def test_a_rerun_adds_updates_deletes_and_skips_by_source(folder: Path):
    index = InMemoryIndex()

    first = index_documents(DirectoryLoader(folder), index)
    again = index_documents(DirectoryLoader(folder), index)
    write(folder, {"alpha.md": "# alpha\n\nalpha second version", "delta.txt": "delta is new"})
    (folder / "nested" / "gamma.txt").unlink()
    changed = index_documents(DirectoryLoader(folder), index)

    assert counts(first) == (3, 0, 0, 0) and first.chunks_written == 3
    assert counts(again) == (0, 0, 0, 3) and again.chunks_written == 0
    assert counts(changed) == (1, 1, 1, 1)
    assert changed.chunks_written == 2 and changed.chunks_deleted == 1
    clean = InMemoryIndex()
    index_documents(DirectoryLoader(folder), clean)
    assert contents(index) == contents(clean)
    assert index.source_hashes() == clean.source_hashes()
    assert len(index) == len(clean) == 3


def test_changing_the_splitter_splits_every_source_again(folder: Path):
    write(folder, {"alpha.md": PARAGRAPHS})
    index = InMemoryIndex()
    wide, narrow = RecursiveSplitter(chunk_size=60), RecursiveSplitter(chunk_size=35)

    index_documents(DirectoryLoader(folder), index, splitter=wide)
    same = index_documents(DirectoryLoader(folder), index, splitter=RecursiveSplitter(60))
    resplit = index_documents(DirectoryLoader(folder), index, splitter=narrow)
    layered = index_documents(
        DirectoryLoader(folder), index, splitter=[MarkdownHeaderSplitter(), narrow]
    )

    assert counts(same) == (0, 0, 0, 3)
    assert counts(resplit) == (0, 3, 0, 0)
    assert counts(layered) == (0, 3, 0, 0)
    alpha = index.keyword_search("lighthouse ships bell", k=10)
    assert sorted(hit.document.text for hit in alpha) == [
        "Ships passed in the fog.",
        "The bell rang twice.",
        "The lighthouse keeper woke early.",
    ]
    assert all(hit.document.id.startswith(str(folder / "alpha.md") + "@") for hit in alpha)


def test_two_folders_share_an_index_and_a_rerun_deletes_only_within_its_own(tmp_path: Path):
    first, second = tmp_path / "first", tmp_path / "second"
    write(first, {"one.txt": "one", "two.txt": "two"})
    write(second, {"three.txt": "three", "four.txt": "four"})
    index = InMemoryIndex()
    index_documents(DirectoryLoader(first), index)
    index_documents(DirectoryLoader(second), index)

    (first / "two.txt").unlink()
    rerun = index_documents(DirectoryLoader(first), index)

    assert counts(rerun) == (0, 0, 1, 1)
    assert sorted(Path(source).name for source in index.source_hashes()) == [
        "four.txt",
        "one.txt",
        "three.txt",
    ]


def test_two_globs_over_one_folder_keep_each_other_s_files(folder: Path):
    index = InMemoryIndex()
    index_documents(DirectoryLoader(folder, "**/*.md"), index)
    index_documents(DirectoryLoader(folder, "**/*.txt"), index)

    (folder / "beta.txt").unlink()
    rerun = index_documents(DirectoryLoader(folder, "**/*.txt"), index)

    assert counts(rerun) == (0, 0, 1, 1)
    assert sorted(Path(source).name for source in index.source_hashes()) == [
        "alpha.md",
        "gamma.txt",
    ]


def test_a_folder_whose_name_begins_another_s_is_not_its_scope(tmp_path: Path):
    write(tmp_path / "docs", {"a.txt": "a"})
    write(tmp_path / "docs2", {"b.txt": "b"})
    index = InMemoryIndex()
    index_documents(DirectoryLoader(tmp_path / "docs2"), index)

    index_documents(DirectoryLoader(tmp_path / "docs"), index)

    assert len(index.source_hashes()) == 2


def test_incremental_cleanup_keeps_what_the_run_did_not_meet(folder: Path):
    index = InMemoryIndex()
    index_documents(DirectoryLoader(folder), index)
    (folder / "beta.txt").unlink()

    kept = index_documents(DirectoryLoader(folder), index, cleanup="incremental")
    full = index_documents(DirectoryLoader(folder), index, cleanup="full")

    assert counts(kept) == (0, 0, 0, 2)
    assert counts(full) == (0, 0, 1, 2)


def test_documents_not_from_a_loader_are_scoped_to_the_whole_index_or_to_scope():
    index = InMemoryIndex()
    notes = [Document(f"note {n}", {"source": f"notes/{n}"}, id=f"n{n}") for n in range(3)]
    mail = [Document("mail", {"source": "mail/1"}, id="m1")]
    index_documents([*notes, *mail], index)

    scoped = index_documents(notes[:2], index, scope="notes")
    everything = index_documents(notes[:1], index)

    assert counts(scoped) == (0, 0, 1, 2)
    assert counts(everything) == (0, 0, 2, 1)
    assert list(index.source_hashes()) == ["notes/0"]


def test_a_source_s_pages_form_one_record_and_a_changed_page_updates_it():
    index = InMemoryIndex()
    pages = [Document(f"page {n}", {"source": "book.pdf", "page": n}, id=f"p{n}") for n in (1, 2)]
    first = index_documents(pages, index)
    pages[1] = Document("page 2 edited", {"source": "book.pdf", "page": 2}, id="p2")
    moved = [Document("page 1", {"source": "book.pdf", "page": 1, "tag": "x"}, id="p1")]

    edited = index_documents(pages, index)
    retagged = index_documents([moved[0], pages[1]], index)

    assert counts(first) == (1, 0, 0, 0) and first.chunks_written == 2
    assert counts(edited) == (0, 1, 0, 0)
    assert counts(retagged) == (0, 1, 0, 0)  # metadata is content too


def test_chunks_are_embedded_in_batches_and_unchanged_ones_come_from_the_cache(
    folder: Path, openai_server: OpenAIServer
):
    write(folder, {"alpha.md": PARAGRAPHS})
    model = OpenAIEmbeddings(base_url=openai_server.base_url, api_key=TEST_API_KEY)
    index = InMemoryIndex(CachedEmbeddings(model))
    splitter = RecursiveSplitter(chunk_size=40)

    index_documents(DirectoryLoader(folder), index, splitter=splitter, batch_size=4)
    sent_first = [len(request.body["input"]) for request in openai_server.requests]
    write(folder, {"alpha.md": PARAGRAPHS.replace("twice", "three times")})
    edited = index_documents(DirectoryLoader(folder), index, splitter=splitter, batch_size=4)

    assert sent_first == [4, 1]  # 5 chunks of 3 sources, gathered across sources
    assert counts(edited) == (0, 1, 0, 2)
    assert openai_server.requests[-1].body["input"] == ["The bell rang three times."]
    assert [hit.document.text for hit in index.search("bell rang three times", k=1)] == [
        "The bell rang three times."
    ]
    model.close()


def test_an_index_given_an_embedder_indexes_again_what_it_kept_without_vectors(
    folder: Path, openai_server: OpenAIServer
):
    model = OpenAIEmbeddings(base_url=openai_server.base_url, api_key=TEST_API_KEY)
    index = InMemoryIndex()
    index_documents(DirectoryLoader(folder), index)

    index.embedder = model
    with_vectors = index_documents(DirectoryLoader(folder), index)
    again = index_documents(DirectoryLoader(folder), index)

    assert counts(with_vectors) == (0, 3, 0, 0)
    assert counts(again) == (0, 0, 0, 3)
    assert len(index.search("beta", k=3)) == 3
    model.close()


def test_a_run_that_fails_part_way_deletes_nothing_and_the_rerun_finishes(folder: Path):
    index = InMemoryIndex()
    index_documents(DirectoryLoader(folder), index)
    (folder / "beta.txt").unlink()
    (folder / "broken.txt").write_bytes(b"valid line\n\xff\xfe not utf-8")  # after alpha.md

    with pytest.raises(LoadError, match="line 2"):
        index_documents(DirectoryLoader(folder), index)
    assert len(index.source_hashes()) == 3  # beta.txt is still there: no cleanup ran

    (folder / "broken.txt").unlink()
    rerun = index_documents(DirectoryLoader(folder), index)
    assert counts(rerun) == (0, 0, 1, 2)


def test_what_the_loader_passed_by_is_reported_and_the_rest_indexed(folder: Path):
    (folder / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (folder / "nested" / "loop").symlink_to(folder, target_is_directory=True)
    (folder / "gone.txt").symlink_to(folder / "nowhere.txt")
    (folder / "latin1.txt").write_bytes(b"caf\xe9")
    index = InMemoryIndex()

    result = index_documents(DirectoryLoader(folder, on_error="skip"), index)

    assert counts(result) == (3, 0, 0, 0)
    reasons = {Path(skip.path).name: skip.reason for skip in result.not_read}
    assert reasons["image.png"].startswith("holds binary data")
    assert "(a loop" in reasons["loop"]
    assert reasons["gone.txt"].startswith("cannot be read")
    assert "does not decode" in reasons["latin1.txt"] or "utf" in reasons["latin1.txt"].lower()


def test_progress_is_told_after_each_source(folder: Path):
    seen: list[tuple[int, int, int, int]] = []
    index = InMemoryIndex()
    index_documents(DirectoryLoader(folder), index, on_progress=lambda r: seen.append(counts(r)))
    index_documents(DirectoryLoader(folder), index, on_progress=lambda r: seen.append(counts(r)))

    assert seen == [
        (1, 0, 0, 0),
        (2, 0, 0, 0),
        (3, 0, 0, 0),
        (0, 0, 0, 1),
        (0, 0, 0, 2),
        (0, 0, 0, 3),
    ]


def test_documents_are_read_a_source_at_a_time(folder: Path):
    read: list[str] = []

    def documents() -> Iterator[Document]:
        for n in range(1000):
            read.append(f"s{n}")
            yield Document(f"text {n}", {"source": f"s{n}"}, id=f"d{n}")

    index = InMemoryIndex()
    written_when: list[int] = []
    index_documents(
        documents(), index, batch_size=10, on_progress=lambda r: written_when.append(len(read))
    )

    assert written_when[0] <= 11  # the first batch was written before the 12th source was read
    assert len(index) == 1000


def test_the_async_twin_indexes_the_same(folder: Path):
    index = InMemoryIndex()

    result = asyncio.run(aindex_documents(DirectoryLoader(folder), index))

    assert counts(result) == (3, 0, 0, 0)
    assert counts(index_documents(DirectoryLoader(folder), index)) == (0, 0, 0, 3)


def test_wrong_input_is_named():
    index = InMemoryIndex()
    apart = [
        Document("a", {"source": "x"}, id="1"),
        Document("b", {"source": "y"}, id="2"),
        Document("c", {"source": "x"}, id="3"),
    ]
    with pytest.raises(IndexConfigError, match="source 'x' came apart"):
        index_documents(apart, index)
    with pytest.raises(IndexConfigError, match="has no source"):
        index_documents([Document("a", id="1")], index)
    with pytest.raises(IndexTypeError, match="iterable of Documents"):
        index_documents(Document("a", {"source": "x"}), index)  # type: ignore[arg-type]
    with pytest.raises(IndexTypeError, match="takes Documents"):
        index_documents(["text"], index)  # type: ignore[list-item]
    with pytest.raises(IndexTypeError, match="keep records of its sources"):
        index_documents([], object())  # type: ignore[arg-type]
    with pytest.raises(IndexConfigError, match="cleanup must be"):
        index_documents([], index, cleanup=None)  # type: ignore[arg-type]
    with pytest.raises(IndexConfigError, match="batch_size"):
        index_documents([], index, batch_size=0)
    with pytest.raises(IndexTypeError, match="splitter must have split"):
        index_documents([], index, splitter=len)  # type: ignore[arg-type]

    class Bare:
        def split(self, documents: object) -> list[Document]:
            return []

    with pytest.raises(IndexConfigError, match="needs a __repr__"):
        index_documents([], index, splitter=Bare())


KILLED_CHILD = """
import os, signal, sys, time
from chainkit.documents import DirectoryLoader, RecursiveSplitter
from chainkit.indexes import SQLIndex, index_documents

folder, db, after = sys.argv[1], sys.argv[2], int(sys.argv[3])

def written(result):
    print(result.added + result.updated, flush=True)
    if after and result.added + result.updated >= after:
        os.kill(os.getpid(), signal.SIGKILL)  # part way through the run
    time.sleep(0 if after else 0.5)  # the other process's kill lands before the end

index_documents(
    DirectoryLoader(folder), SQLIndex(db), splitter=RecursiveSplitter(40), batch_size=8,
    on_progress=written,
)
"""


def sql_contents(db: Path) -> tuple[dict[str, str], set[tuple[str, str, str]]]:
    """The source records of the SQLite index `db`, and every document it holds."""
    index = SQLIndex(db)
    try:
        hits = index.keyword_search("shared", k=100_000)
        held = {
            (hit.document.id, hit.document.text, repr(sorted(hit.document.metadata.items())))
            for hit in hits
        }
        return index.source_hashes(), held
    finally:
        index.close()


def edited_folder(root: Path) -> None:
    """A folder indexed, then changed: files edited, deleted and added."""
    write(root, {f"f{n:02d}.txt": f"shared words of file {n}. " * 6 for n in range(30)})


@pytest.mark.parametrize("kill", ["from within, after a batch", "from outside"])
def test_a_run_killed_part_way_is_repaired_by_the_next(tmp_path: Path, kill: str):
    folder, db = tmp_path / "docs", tmp_path / "docs.db"
    edited_folder(folder)
    index = SQLIndex(db)
    index_documents(DirectoryLoader(folder), index, splitter=RecursiveSplitter(40))
    index.close()
    for n in range(0, 30, 3):
        write(folder, {f"f{n:02d}.txt": f"shared words, edited, of file {n}. " * 6})
    for n in range(1, 30, 7):
        (folder / f"f{n:02d}.txt").unlink()
    write(folder, {f"new{n}.txt": f"shared new words {n}. " * 6 for n in range(5)})

    after = 4 if kill.startswith("from within") else 0
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_CHILD, str(folder), str(db), str(after)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    if not after:  # killed by another process, wherever it is once a source was written
        while int(child.stdout.readline() or 99) < 1:
            pass  # sources skipped as unchanged: none written yet
        child.kill()
    child.wait(timeout=60)
    assert child.returncode == -9
    index = SQLIndex(db)
    rerun = index_documents(DirectoryLoader(folder), index, splitter=RecursiveSplitter(40))
    index.close()

    clean = tmp_path / "clean.db"
    index = SQLIndex(clean)
    index_documents(DirectoryLoader(folder), index, splitter=RecursiveSplitter(40))
    index.close()
    assert sql_contents(db) == sql_contents(clean)
    assert rerun.sources == 30 and rerun.deleted == 5  # the killed run never cleaned up
    assert 0 < rerun.added + rerun.updated < 9 + 5  # what the killed run wrote is kept


def test_a_batch_of_sources_is_written_in_one_transaction_all_or_nothing(tmp_path: Path):
    index = SQLIndex(tmp_path / "docs.db")
    first = Document("one", {"source": "a"}, id="a1")
    second = Document("two", {"source": "b"}, id="b1")
    index.replace_sources([SourceReplacement("a", "h1", [first], [[1.0, 0.0]])])

    with pytest.raises(IndexConfigError):
        index.replace_sources(
            [
                SourceReplacement("a", "h2", [first], [[0.0, 1.0]]),
                SourceReplacement("b", "h3", [second], [[1.0, 0.0, 0.0]]),  # a third dimension
            ]
        )

    with pytest.raises(IndexTypeError, match="takes SourceReplacement"):
        index.replace_sources([("b", "h3", [second], None)])  # type: ignore[list-item]

    assert index.source_hashes() == {"a": "h1"}
    assert index.search([1.0, 0.0], k=1)[0].score == pytest.approx(1.0)
    index.close()
