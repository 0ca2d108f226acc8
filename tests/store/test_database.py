"""The store layer on a real SQLite file and the real PostgreSQL: one way to open a database,
`?` statements on both dialects, transactions all or nothing, schema versions recorded per
component, and failures named without the password."""

from __future__ import annotations

import os
import pickle
import threading
from pathlib import Path
from typing import Any

import pytest

import chainkit
from chainkit import _store
from chainkit._store import Database, open_database
from tests.support import forked
from tests.support.postgres import postgres_dsn


def _make(database: Database, table: str, version: int = 1) -> None:
    create = [f"CREATE TABLE IF NOT EXISTS {table} (k TEXT PRIMARY KEY, v TEXT NOT NULL)"]
    database.ensure_table(table, version, {"sqlite": create, "postgresql": create})


def test_an_open_database_is_handed_on_as_it_is(database: Database) -> None:
    assert open_database(database) is database


def test_statements_take_question_marks_on_both_dialects(database: Database, table: str) -> None:
    _make(database, table)
    with database.transaction("write") as cursor:
        cursor.executemany(f"INSERT INTO {table} VALUES (?, ?)", [("a", "50% off"), ("b", "?")])
    rows = database.run(
        "read",
        lambda c: c.execute(f"SELECT k, v FROM {table} WHERE v LIKE '%' ORDER BY k").fetchall(),
        write=False,
    )
    assert [tuple(row) for row in rows] == [("a", "50% off"), ("b", "?")]


def test_a_transaction_that_raises_leaves_nothing(database: Database, table: str) -> None:
    _make(database, table)

    def half(cursor: _store.Cursor) -> None:
        cursor.execute(f"INSERT INTO {table} VALUES (?, ?)", ("a", "1"))
        raise KeyError("stop")

    with pytest.raises(KeyError):
        database.run("write", half)
    with pytest.raises(KeyError), database.transaction("write") as cursor:
        cursor.execute(f"INSERT INTO {table} VALUES (?, ?)", ("b", "2"))
        raise KeyError("stop")
    count = database.run("count", lambda c: c.execute(f"SELECT count(*) FROM {table}").fetchone())
    assert count[0] == 0


def test_many_threads_share_one_database(database: Database, table: str) -> None:
    _make(database, table)

    def write(n: int) -> None:
        for i in range(20):
            with database.transaction("write") as cursor:
                cursor.execute(f"INSERT INTO {table} VALUES (?, ?)", (f"{n}-{i}", "x"))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    count = database.run("count", lambda c: c.execute(f"SELECT count(*) FROM {table}").fetchone())
    assert count[0] == 80


def test_each_component_records_its_schema_version(where: str, table: str) -> None:
    first = open_database(where)
    _make(first, table, version=2)
    version = first.run(
        "read",
        lambda c: c.execute(
            "SELECT version FROM chainkit_schema WHERE name = ?", (table,)
        ).fetchone(),
    )
    assert version[0] == 2
    first.close()
    older = open_database(where)  # as an older chainkit, knowing version 1 only
    with pytest.raises(chainkit.StoreError, match=rf"'{table}'.*version 2.*version 1.*upgrade"):
        _make(older, table, version=1)
    older.close()


def test_a_migration_runs_once_from_the_recorded_version(where: str, table: str) -> None:
    seen: list[int | None] = []
    create = [f"CREATE TABLE IF NOT EXISTS {table} (k TEXT PRIMARY KEY)"]
    statements = {"sqlite": create, "postgresql": create}
    for version in (1, 1, 2, 2):
        database = open_database(where)
        database.ensure_table(table, version, statements, lambda c, old: seen.append(old))
        database.close()
    assert seen == [None, 1]


def test_a_closed_database_says_so(database: Database) -> None:
    database.close()
    with pytest.raises(chainkit.StoreError, match=r"closed"):
        database.run("read", lambda c: c.execute("SELECT 1").fetchone())


@pytest.mark.parametrize("where", [None, 42, b"store.db", "", ["x"]])
def test_what_names_no_database_is_refused(where: object) -> None:
    with pytest.raises(chainkit.StoreConfigError):
        open_database(where)  # type: ignore[arg-type]


def test_sqlite_failures_name_the_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database, " * 100)
    with pytest.raises(chainkit.StoreError, match="not a SQLite database") as raised:
        open_database(path).run("read", lambda c: c.execute("SELECT 1").fetchone())
    assert repr(str(path)) in str(raised.value)
    assert not isinstance(raised.value, chainkit.StoreUnavailableError)


def test_postgres_never_shows_the_password() -> None:
    dsn = postgres_dsn()
    database = open_database(dsn)
    assert repr(database).startswith("PostgresDatabase(ck@") and "ck:ck" not in repr(database)
    secret = "s3cret-Pa55word"
    with pytest.raises(chainkit.StoreConfigError) as raised:
        open_database(f"postgresql://app:{secret}@db.example/app?bogus=1")
    assert secret not in str(raised.value)
    wrong = open_database(f"postgresql://ck:{secret}@127.0.0.1:5432/{dsn.rsplit('/', 1)[1]}")
    with pytest.raises(chainkit.StoreError, match="refused the login") as refused:
        wrong.run("read", lambda c: c.execute("SELECT 1").fetchone())
    assert secret not in str(refused.value) and secret not in repr(
        pickle.loads(pickle.dumps(refused.value))
    )


def _backend(database: Database) -> int:
    """The PostgreSQL server process serving the database's connection."""
    return int(database.run("pid", lambda c: c.execute("SELECT pg_backend_pid()").fetchone()[0]))


def _fork_and_compare(dsn: str) -> list[bool]:
    """In a process of its own (a fork of the threaded test process might hang): a database
    used, then forked; whether the child was served by another connection, and the parent
    still by its own."""
    database = open_database(dsn)
    parent = _backend(database)
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.write(writer, str(_backend(database)).encode())
        finally:
            os._exit(0)
    os.close(writer)
    os.waitpid(child, 0)
    served = os.read(reader, 64).decode()
    return [bool(served) and int(served) != parent, _backend(database) == parent]


def test_a_forked_child_opens_its_own_postgres_connection() -> None:
    _, outcome = forked.run(_fork_and_compare, postgres_dsn())
    assert outcome == [True, True]


def test_a_libpq_connection_string_names_postgres_never_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    postgres_dsn()
    monkeypatch.chdir(tmp_path)
    for dsn in ("host=127.0.0.1 dbname=app user=ck", " dbname = app", "service=main"):
        assert open_database(dsn).dialect == "postgresql", dsn
    assert open_database("hosts.db").dialect == "sqlite"
    assert sorted(os.listdir(tmp_path)) == ["hosts.db"]


def test_a_read_only_sqlite_database_is_never_made_nor_written(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(chainkit.StoreError, match="check the path"):
        _store.open_sqlite(missing, read_only=True)
    assert not missing.exists()
    path = tmp_path / "kept.db"
    writer = open_database(path)
    _make(writer, "kept")
    writer.close()
    before = path.read_bytes()
    reader = _store.open_sqlite(path, read_only=True)
    assert reader.run("read", lambda c: c.execute("SELECT count(*) FROM kept").fetchone())[0] == 0
    with pytest.raises(chainkit.StoreError, match="read-only"):
        reader.run("write", lambda c: c.execute("INSERT INTO kept VALUES ('a', 'b')"))
    reader.close()
    assert path.read_bytes() == before


def _open_at_once(path: str, start: float) -> None:
    import time

    time.sleep(max(0.0, start - time.time()))
    database = open_database(path)
    database.run("make", lambda c: c.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER)"))

    def insert(cursor: Any) -> None:
        cursor.execute("INSERT INTO t VALUES (?)", (1,))

    for _ in range(20):
        database.run("write", insert)
    database.close()


def test_processes_opening_one_new_sqlite_file_at_once_all_open_it(tmp_path: Path) -> None:
    # Putting a file in WAL mode finds it locked while another process does the same; SQLite
    # then answers at once instead of waiting, so opening waits on its own.
    import multiprocessing
    import time

    context = multiprocessing.get_context("spawn")
    for attempt in range(3):
        path = str(tmp_path / f"new-{attempt}.db")
        start = time.time() + 1.5
        workers = [context.Process(target=_open_at_once, args=(path, start)) for _ in range(16)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        assert [worker.exitcode for worker in workers] == [0] * 16
