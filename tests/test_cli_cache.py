"""`chainkit cache stats|clear --db WHERE`: a SQL response cache's figures, and emptying it;
a path that holds no cache is refused, never made into one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chainkit._cli.entry_point import main
from chainkit.llms import SQLCache
from chainkit.llms.cache import CachedReply
from chainkit.schema import Message
from tests.support.postgres import postgres_dsn


def _filled(where: str | Path) -> None:
    cache = SQLCache(where, clock=lambda: 1_800_000_000.0)
    cache.clear()
    cache.put("a", CachedReply(Message.assistant("Paris.")))
    cache.put("b", CachedReply(Message.assistant("Lyon.")))
    cache.get("a")
    cache.close()


def test_stats_then_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    db = tmp_path / "cache.db"
    _filled(db)
    assert main(["cache", "stats", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "replies: 2\nhits: 1\n" in out
    assert "oldest put: 2027-01-15 08:00:00 UTC" in out
    assert main(["cache", "clear", "--db", str(db)]) == 0
    assert capsys.readouterr().out == "removed 2 replies\n"
    assert SQLCache(db).stored().entries == 0
    assert main(["cache", "stats", "--db", str(db)]) == 0
    assert capsys.readouterr().out == "replies: 0\nhits: 0\nsize: 0 characters\n"


def test_stats_and_clear_on_postgresql(capsys: pytest.CaptureFixture[str]):
    dsn = postgres_dsn()
    _filled(dsn)
    assert main(["cache", "stats", "--db", dsn]) == 0
    assert "replies: 2\n" in capsys.readouterr().out
    assert main(["cache", "clear", "--db", dsn]) == 0
    assert capsys.readouterr().out == "removed 2 replies\n"


def test_a_path_without_a_cache_is_refused_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    missing = tmp_path / "typo.db"
    assert main(["cache", "stats", "--db", str(missing)]) == 1
    assert "no file" in capsys.readouterr().err and not missing.exists()
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
    assert main(["cache", "clear", "--db", str(other)]) == 1
    assert "a SQLite database without a response cache" in capsys.readouterr().err
    with sqlite3.connect(other) as connection:
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        assert [row[0] for row in tables] == ["notes"]
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    assert main(["cache", "stats", "--db", str(junk)]) == 1
    assert "not a SQLite database" in capsys.readouterr().err
    assert main(["cache", "stats", "--db", str(tmp_path)]) == 1
    assert "is a folder" in capsys.readouterr().err
