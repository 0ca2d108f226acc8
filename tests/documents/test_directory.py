"""DirectoryLoader reads a folder lazily, in a stable order, and passes by (and reports) what
is not text, never hanging on a link that loops."""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
from pathlib import Path

import pytest

from chainkit.documents import DirectoryLoader, LoadError, Skipped
from chainkit.documents.errors import DocumentValueError

DATA = Path(__file__).parent / "data"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    for name in ("lighthouse.txt", "guide.md", "article.html", "harbour.pdf"):
        shutil.copy(DATA / name, root / name)
    (root / "nested" / "deeper").mkdir(parents=True)
    (root / "nested" / "deeper" / "notes.md").write_text("# Notes\n\nDeep.", encoding="utf-8")
    (root / "nested" / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (root / "nested" / "empty.txt").write_bytes(b"")
    with (root / "nested" / "huge.log").open("wb") as file:
        file.truncate(1 << 30)  # sparse: a gigabyte that takes no time to make
    (root / "nested" / "loop").symlink_to(root, target_is_directory=True)
    (root / "nested" / "gone.txt").symlink_to(root / "nowhere.txt")
    os.mkfifo(root / "nested" / "pipe.txt")
    (root / "nested" / "zeros.txt").symlink_to("/dev/zero")
    return root


def test_every_text_file_is_loaded_in_order_and_the_rest_reported(folder, caplog):
    loader = DirectoryLoader(folder)
    with caplog.at_level(logging.WARNING, logger="chainkit.documents"):
        documents = list(loader)
    sources = [Path(document.metadata["source"]).relative_to(folder) for document in documents]
    pdf_pages = [Path("harbour.pdf")] * 2 if importlib.util.find_spec("pypdf") else []
    assert sources == [
        Path("article.html"),
        Path("guide.md"),
        *pdf_pages,
        Path("lighthouse.txt"),
        Path("nested/deeper/notes.md"),
    ]
    reasons = {
        Path(skip.path).relative_to(folder).as_posix(): skip.reason for skip in loader.skipped
    }
    assert reasons["nested/empty.txt"] == "empty"
    assert reasons["nested/image.png"].startswith("holds binary data")
    assert reasons["nested/huge.log"].startswith("1,073,741,824 bytes is more than max_bytes")
    assert reasons["nested/loop"] == "a link to a folder already read (a loop, or a copy)"
    assert reasons["nested/gone.txt"].startswith("cannot be read")
    assert reasons["nested/pipe.txt"] == "not a regular file (a pipe, device or socket)"
    assert reasons["nested/zeros.txt"] == reasons["nested/pipe.txt"]
    assert len(caplog.records) == len(loader.skipped)


def test_two_links_to_one_folder_give_its_files_once(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "note.txt").write_text("once", encoding="utf-8")
    root = tmp_path / "root"
    root.mkdir()
    (root / "a").symlink_to(shared, target_is_directory=True)
    (root / "b").symlink_to(shared, target_is_directory=True)
    loader = DirectoryLoader(root)
    assert [document.text for document in loader] == ["once"]
    assert [Path(skip.path).name for skip in loader.skipped] == ["b"]


def test_a_glob_chooses_files_at_any_depth(folder):
    loader = DirectoryLoader(folder, "**/*.md")
    titles = [document.metadata["title"] for document in loader]
    assert titles == ["Ferry guide", "Notes"]  # once each: the loop is not followed
    assert [document.metadata["title"] for document in DirectoryLoader(folder, "*.md")] == [
        "Ferry guide"
    ]


def test_the_folder_is_read_as_documents_are_asked_for(folder):
    loader = iter(DirectoryLoader(folder, "**/*.md"))
    (folder / "nested" / "deeper" / "notes.md").unlink()
    assert next(loader).metadata["title"] == "Ferry guide"
    assert next(loader, None) is None  # removed before the walk reached it


def test_files_lists_what_an_iteration_reads_without_reading_it(folder):
    loader = DirectoryLoader(folder)
    listed = [path.relative_to(folder).as_posix() for path in loader.files()]
    (folder / "nested" / "image.png").unlink()  # listed already; never read
    assert listed == [
        "article.html",
        "guide.md",
        "harbour.pdf",
        "lighthouse.txt",
        "nested/huge.log",
        "nested/image.png",
        "nested/deeper/notes.md",
    ]
    assert loader.skipped == []
    with pytest.raises(LoadError, match="is not a folder"):
        DirectoryLoader(folder / "absent").files()


def test_covers_tells_the_paths_within_the_folder_that_the_glob_matches(folder):
    loader = DirectoryLoader(folder, "**/*.md")
    assert loader.covers(folder / "guide.md")
    assert loader.covers(str(folder / "nested" / "gone" / "old.md"))  # need not exist
    assert not loader.covers(folder / "lighthouse.txt")
    assert not loader.covers(folder.parent / "guide.md")
    assert not loader.covers("guide.md")  # relative: not within the folder named absolutely
    top = DirectoryLoader(folder, "*.md")
    assert top.covers(folder / "guide.md") and not top.covers(folder / "nested" / "notes.md")


def test_a_file_that_does_not_decode_raises_or_is_skipped(folder):
    shutil.copy(DATA / "invalid_utf8.txt", folder / "zz.txt")
    with pytest.raises(LoadError, match=r"zz\.txt, line 2"):
        list(DirectoryLoader(folder, "*.txt"))
    loader = DirectoryLoader(folder, "*.txt", on_error="skip")
    assert [Path(d.metadata["source"]).name for d in loader] == ["lighthouse.txt"]
    assert [Path(skip.path).name for skip in loader.skipped] == ["zz.txt"]
    assert "line 2" in loader.skipped[0].reason


def test_a_pdf_without_pypdf_is_skipped_and_says_why(folder, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pypdf", None)
    loader = DirectoryLoader(folder, "*.pdf")
    assert list(loader) == []
    assert loader.skipped == [
        Skipped(str(folder / "harbour.pdf"), "load_pdf needs pypdf: pip install 'chainkit[pdf]'")
    ]


def test_a_missing_folder_and_bad_settings_are_named(tmp_path):
    with pytest.raises(LoadError, match="is not a folder"):
        list(DirectoryLoader(tmp_path / "absent"))
    with pytest.raises(DocumentValueError, match="on_error must be"):
        DirectoryLoader(tmp_path, on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(DocumentValueError, match="glob must be"):
        DirectoryLoader(tmp_path, "")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder")
def test_an_unreadable_folder_is_reported(folder):
    locked = folder / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        loader = DirectoryLoader(folder, "**/*.md")
        list(loader)
    finally:
        locked.chmod(0o755)
    assert any("cannot be listed" in skip.reason for skip in loader.skipped)
