"""The loaders read real files of each format (tests/documents/data, written for these tests)
into documents, lazily, and name the file and line of what they cannot read."""

from __future__ import annotations

import importlib.util
import os
import sys
import tracemalloc
from pathlib import Path

import pytest

from chainkit.documents import (
    Document,
    LoadError,
    load_csv,
    load_html,
    load_jsonl,
    load_markdown,
    load_pdf,
    load_text,
)
from chainkit.documents.errors import (
    BinaryFileError,
    DocumentValueError,
    ExtraMissingError,
    FileTooLargeError,
)

DATA = Path(__file__).parent / "data"


def needs(module: str) -> None:
    """Skips without an extra; under CI (.ci/run installs them all) the test fails instead."""
    if importlib.util.find_spec(module) is None and not os.environ.get("CI"):
        pytest.skip(f"{module} is not installed (an extra: .ci/run installs it)")


def test_a_text_file_is_one_document_named_by_its_path():
    [document] = load_text(DATA / "lighthouse.txt")
    assert document.text == (DATA / "lighthouse.txt").read_text(encoding="utf-8")
    assert document.id == str(DATA / "lighthouse.txt")
    assert document.metadata["source"] == str(DATA / "lighthouse.txt")


def test_a_loader_reads_nothing_until_asked():
    documents = load_text(DATA / "no such file.txt")
    with pytest.raises(LoadError, match=r"no such file\.txt: cannot be read"):
        next(documents)


def test_markdown_keeps_its_first_heading_as_the_title():
    [document] = load_markdown(DATA / "guide.md")
    assert document.metadata["title"] == "Ferry guide"
    assert "```sh" in document.text


def test_invalid_utf8_is_named_by_file_line_and_byte():
    with pytest.raises(LoadError) as caught:
        list(load_text(DATA / "invalid_utf8.txt"))
    assert caught.value.line == 2
    assert str(caught.value).startswith(f"{DATA / 'invalid_utf8.txt'}, line 2: byte 30 ")
    assert "encoding=" in str(caught.value)


def test_a_named_encoding_reads_what_utf8_cannot():
    with pytest.raises(LoadError, match="line 1"):
        list(load_text(DATA / "latin1.txt"))
    [document] = load_text(DATA / "latin1.txt", encoding="latin-1")
    assert document.text.startswith("Café au lait")


def test_a_streamed_file_keeps_its_first_bytes_when_no_mark_is_there(tmp_path):
    path = tmp_path / "plain.jsonl"
    path.write_text('{"t": "abc"}\n', encoding="utf-8")
    assert next(load_jsonl(path, "t", encoding="utf-8-sig")).text == "abc"
    path.write_bytes(b'\xef\xbb\xbf{"t": "marked"}\n')
    assert next(load_jsonl(path, "t")).text == "marked"


def test_a_byte_order_mark_names_the_encoding(tmp_path):
    wide = tmp_path / "wide.txt"
    wide.write_bytes("Größe\nzweite Zeile\n".encode("utf-16"))
    [document] = load_text(wide)
    assert document.text == "Größe\nzweite Zeile\n"
    marked = tmp_path / "marked.txt"
    marked.write_bytes(b"\xef\xbb\xbfplain")
    assert next(load_text(marked)).text == "plain"


def test_an_unknown_encoding_is_refused_at_once():
    with pytest.raises(DocumentValueError, match="unknown encoding 'klingon'"):
        load_text(DATA / "lighthouse.txt", encoding="klingon")


def test_binary_data_is_refused_as_binary(tmp_path):
    image = tmp_path / "image.txt"
    image.write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    with pytest.raises(BinaryFileError, match="binary data"):
        list(load_text(image))


def test_an_empty_file_is_an_empty_document(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    assert [document.text for document in load_text(tmp_path / "empty.txt")] == [""]


@pytest.mark.parametrize(
    "loader",
    [
        load_text,
        load_markdown,
        load_html,
        lambda path: load_jsonl(path, "text"),
        lambda path: load_csv(path, "text"),
        "pdf",
    ],
)
def test_a_pipe_or_a_device_is_refused_not_waited_on(tmp_path, loader):
    if loader == "pdf":
        needs("pypdf")
        loader = load_pdf
    pipe = tmp_path / "pipe.txt"
    os.mkfifo(pipe)  # reading would wait for a writer that never comes
    with pytest.raises(LoadError, match="is not a regular file but a pipe, device or socket"):
        list(loader(pipe))
    endless = tmp_path / "endless.txt"
    endless.symlink_to("/dev/zero")  # reading would never end
    with pytest.raises(LoadError, match="is not a regular file"):
        list(loader(endless))
    with pytest.raises(LoadError, match="is not a regular file but a folder"):
        list(loader(tmp_path))


def test_a_file_larger_than_the_limit_is_refused_unread(tmp_path):
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as file:
        file.truncate(1 << 30)  # a sparse gigabyte: no time or disk to make
    with pytest.raises(FileTooLargeError, match="1,073,741,824 bytes is more than max_bytes"):
        list(load_text(huge))


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux's /proc")
def test_a_file_longer_than_its_size_said_is_still_bounded():
    # Files of /proc say they are empty and are not; a file may also grow while it is read.
    with pytest.raises(FileTooLargeError, match="grew past max_bytes=10 as it was read"):
        list(load_text("/proc/self/status", max_bytes=10))


def test_html_gives_the_main_text_without_navigation_scripts_or_footer():
    for extractor in ("builtin", "auto"):
        [document] = load_html(DATA / "article.html", extractor=extractor)
        assert "two high tides a day" in document.text
        assert "check the tables first" in document.text
        for left_out in ("Archive", "Contact us", "tracking", "newsletter", "Copyright", "font"):
            assert left_out not in document.text
        assert document.metadata["title"] == "Tides of the Bay"


def test_html_with_trafilatura():
    needs("trafilatura")
    [document] = load_html(DATA / "article.html", extractor="trafilatura")
    assert document.metadata["extractor"] == "trafilatura"
    assert "Spring tides come after the new and the full moon" in document.text
    assert "Contact us" not in document.text and "Copyright" not in document.text


def test_html_asked_of_trafilatura_without_it_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "trafilatura", None)  # as if not installed
    with pytest.raises(ExtraMissingError, match=r"pip install 'chainkit\[html\]'"):
        load_html(DATA / "article.html", extractor="trafilatura")
    [document] = load_html(DATA / "article.html")
    assert document.metadata["extractor"] == "builtin"


def test_a_page_with_no_main_element_keeps_its_body_less_navigation(tmp_path):
    page = tmp_path / "plain.html"
    page.write_text(
        "<html><body><nav>Menu</nav><div>First<br>Second</div><p>Third &amp; last</p>"
        "<pre>  keep\n    spacing</pre></body></html>",
        encoding="utf-8",
    )
    [document] = load_html(page, extractor="builtin")
    assert document.text == "First\nSecond\nThird & last\nkeep\nspacing"


def test_html_is_read_in_the_charset_its_meta_declares(tmp_path):
    page = tmp_path / "old.html"
    page.write_bytes(
        b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'
        b"<title>Caf\xe9</title></head><body><p>Caf\xe9 cr\xe8me \x80 2</p></body></html>"
    )
    [document] = load_html(page, extractor="builtin")
    assert document.text == "Café crème € 2"
    assert document.metadata["title"] == "Café"
    with pytest.raises(LoadError, match="line 1"):
        list(load_html(page, encoding="utf-8"))  # named: the declaration gives way


def test_csv_gives_a_document_per_row_with_the_other_columns_as_metadata():
    documents = list(load_csv(DATA / "ferries.csv", "description"))
    assert [document.metadata["route"] for document in documents] == [
        "North",
        "South",
        "East, express",
    ]
    assert documents[2].text == "Crosses in a quarter of an hour;\nruns only in summer."
    assert documents[2].metadata == {
        "route": "East, express",
        "minutes": "15",
        "source": str(DATA / "ferries.csv"),
        "row": 3,
    }
    assert documents[0].id == f"{DATA / 'ferries.csv'}#row=1"
    chosen = next(load_csv(DATA / "ferries.csv", "description", metadata_columns=["minutes"]))
    assert set(chosen.metadata) == {"minutes", "source", "row"}


def test_csv_names_a_missing_column_and_a_broken_row(tmp_path):
    with pytest.raises(LoadError, match=r"line 1: has no column 'text'; its columns"):
        list(load_csv(DATA / "ferries.csv", "text"))
    broken = tmp_path / "broken.csv"
    broken.write_text("a,b\n1,2\n3,4,5\n", encoding="utf-8")
    with pytest.raises(LoadError, match="line 3: has 3 fields where the header has 2"):
        list(load_csv(broken, "a"))


def test_jsonl_gives_a_document_per_line_and_passes_blank_lines_by():
    documents = list(load_jsonl(DATA / "questions.jsonl", "question"))
    assert [document.text for document in documents] == [
        "When does the harbour open?",
        "Where are tickets sold?",
        "潮汐多久来一次？",
    ]
    assert documents[2].metadata == {
        "id": 3,
        "topic": "tides",
        "source": str(DATA / "questions.jsonl"),
        "line": 4,
    }
    assert documents[2].id == f"{DATA / 'questions.jsonl'}#line=4"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"question": "cut', "is not JSON"),
        ("[1, 2]", "holds a list, not an object"),
        ('{"other": 1}', "has no field 'question'"),
        ('{"question": 7}', "its 'question' is a int, not a string"),
        ("[" * 100_000, "is not JSON"),
    ],
)
def test_jsonl_names_the_line_it_cannot_read(tmp_path, line, reason):
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "fine"}\n' + line + "\n", encoding="utf-8")
    documents = load_jsonl(path, "question")
    assert next(documents).text == "fine"
    with pytest.raises(LoadError, match=f"line 2: {reason}"):
        next(documents)


def test_a_gigabyte_of_records_streams_a_line_at_a_time(tmp_path):
    # Three records, then a sparse gigabyte of NUL bytes with no line end: the records come
    # out at once, and the endless line is refused after max_line_bytes, never held whole.
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as file:
        file.write(b'{"t": "a"}\n{"t": "b"}\n{"t": "c"}\n')
        file.truncate(1 << 30)
    tracemalloc.start()
    try:
        documents = load_jsonl(path, "t", max_line_bytes=1 << 20)
        assert [next(documents).text for _ in range(3)] == ["a", "b", "c"]
        with pytest.raises(FileTooLargeError, match="line 4: a line longer than"):
            next(documents)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20


def test_a_nul_inside_a_record_file_is_binary_data(tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_bytes(b"text\nfine\nbad\0row\n")
    with pytest.raises(BinaryFileError, match="line 3"):
        list(load_csv(path, "text"))


def test_pdf_gives_a_document_per_page():
    needs("pypdf")
    documents = list(load_pdf(DATA / "harbour.pdf"))
    assert [document.metadata["page"] for document in documents] == [1, 2]
    assert "opens at six in the morning" in documents[0].text
    assert "kiosk by the lighthouse" in documents[1].text
    assert documents[1].id == f"{DATA / 'harbour.pdf'}#page=2"


def test_a_file_that_is_no_pdf_is_named(tmp_path):
    needs("pypdf")
    fake = tmp_path / "fake.pdf"
    fake.write_bytes(b"%PDF-1.4\nnot really\n")
    with pytest.raises(LoadError, match=r"fake\.pdf: is not a PDF pypdf can read"):
        list(load_pdf(fake))


def test_an_encrypted_pdf_needs_its_password(tmp_path):
    needs("pypdf")
    import pypdf

    writer = pypdf.PdfWriter(clone_from=DATA / "harbour.pdf")
    writer.encrypt("secret", algorithm="RC4-128")
    locked = tmp_path / "locked.pdf"
    writer.write(locked)
    with pytest.raises(LoadError, match=r"locked\.pdf: is encrypted; give its password"):
        list(load_pdf(locked))
    pages = list(load_pdf(locked, password="secret"))
    assert "kiosk by the lighthouse" in pages[1].text


def test_pdf_without_pypdf_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)
    with pytest.raises(ExtraMissingError, match=r"pip install 'chainkit\[pdf\]'"):
        load_pdf(DATA / "harbour.pdf")


def test_loaders_give_documents_that_are_plain_frozen_data():
    [document] = load_text(DATA / "lighthouse.txt")
    assert isinstance(document, Document)
    with pytest.raises(AttributeError):
        document.text = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        document.metadata["source"] = "elsewhere"  # type: ignore[index]
