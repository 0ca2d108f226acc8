"""`chainkit history list|show|delete --db WHERE`: the sessions of a SQLHistory listed, one
shown as JSON lines and deleted; a mistyped, folder, damaged or foreign `--db` is one error
line and never becomes a new database; hostile session ids are escaped wherever shown."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import pytest

from chainkit import checkpoints, memory
from chainkit._cli.entry_point import main
from chainkit.schema import FunctionCall, Message, ToolCall

HOSTILE_ID = "s\x1b[2J\x1b]0;owned\x07\ttab\nline\u202eevil"
CALL = ToolCall(id="call_1", function=FunctionCall("lookup", '{"q": "x"}'))
CONVERSATION = [
    Message.user("hi", name="ann"),
    Message.assistant("", tool_calls=[CALL]),
    Message.tool("found", tool_call_id="call_1", tool_name="lookup"),
    Message.assistant("done"),
]


def _history(where: str | Path, session: str) -> None:
    history = memory.SQLHistory(where)
    history.append(session, CONVERSATION)
    history.close()


def _one_error_line(capsys: pytest.CaptureFixture[str], *expected: str) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("chainkit history: error: "), captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    for part in expected:
        assert part in lines[0]
    return lines[0]


def _shown(out: str) -> list[Message]:
    return [Message.from_dict(json.loads(line)) for line in out.splitlines()]


def test_a_session_is_listed_shown_and_deleted(
    where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    session, other = f"chat-{uuid.uuid4().hex}", f"chat-{uuid.uuid4().hex}"
    _history(where, session)
    _history(where, other)
    assert main(["history", "list", "--db", where]) == 0
    assert {session, other} <= set(capsys.readouterr().out.splitlines())
    assert main(["history", "show", session, "--db", where]) == 0
    assert _shown(capsys.readouterr().out) == CONVERSATION
    assert main(["history", "show", session, "--last", "1", "--db", where]) == 0
    assert _shown(capsys.readouterr().out) == CONVERSATION[-1:]
    assert main(["history", "delete", session, "--db", where]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "deleted session" in captured.err and "4 messages" in captured.err
    assert main(["history", "list", "--db", where]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert session not in listed and other in listed
    assert main(["history", "show", session, "--db", where]) == 1
    line = _one_error_line(capsys, "no session", session)
    assert "ck:ck@" not in line  # a DSN is named without its password
    assert main(["history", "delete", session, "--db", where]) == 1
    _one_error_line(capsys, "no session")


def test_hostile_session_ids_are_escaped_wherever_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "history.db"
    _history(db, HOSTILE_ID)
    assert main(["history", "list", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "\x1b" not in out and "\t" not in out and "\u202e" not in out
    assert main(["history", "show", HOSTILE_ID + "x", "--db", str(db)]) == 1
    line = _one_error_line(capsys, "no session")
    assert "\x1b" not in line and "\u202e" not in line
    assert main(["history", "delete", HOSTILE_ID, "--db", str(db)]) == 0
    assert memory.SQLHistory(db).sessions() == []


@pytest.mark.parametrize("session", ["", "x" * 257])
def test_a_session_id_no_history_takes_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], session: str
) -> None:
    db = tmp_path / "history.db"
    _history(db, "kept")
    for action in ("show", "delete"):
        assert main(["history", action, session, "--db", str(db)]) == 2
        _one_error_line(capsys, "session id")
    assert memory.SQLHistory(db).sessions() == ["kept"]


@pytest.mark.parametrize("last", ["-1", "two", "1e3"])
def test_last_must_be_a_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], last: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["history", "show", "s", "--last", last, "--db", str(tmp_path / "h.db")])
    assert exited.value.code == 2
    assert "--last" in capsys.readouterr().err


@pytest.mark.parametrize("action", [["list"], ["show", "s"], ["delete", "s"]])
def test_a_missing_db_is_one_line_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: list[str]
) -> None:
    mistyped = tmp_path / "histroy.db"
    assert main(["history", *action, "--db", str(mistyped)]) == 1
    _one_error_line(capsys, "no file", "histroy.db")
    assert not mistyped.exists()


@pytest.mark.parametrize(
    "content", [b"", b"not a database\n" * 100, b"SQLite format 3\x00" + b"\xff" * 4000]
)
def test_a_folder_or_damaged_db_is_one_line_and_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    assert main(["history", "list", "--db", str(tmp_path)]) == 1
    _one_error_line(capsys, "is a folder")
    db = tmp_path / "history.db"
    db.write_bytes(content)
    assert main(["history", "list", "--db", str(db)]) == 1
    _one_error_line(capsys, "history.db")
    assert db.read_bytes() == content


def test_a_db_without_chat_histories_is_refused_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    checkpoints.SQLiteStore(db).close()  # chainkit's, but runs only
    with sqlite3.connect(db) as connection:
        before = connection.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall()
    connection.close()
    assert main(["history", "list", "--db", str(db)]) == 1
    _one_error_line(capsys, "without chainkit's chat histories")
    with sqlite3.connect(db) as connection:
        after = connection.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall()
    connection.close()
    assert after == before
