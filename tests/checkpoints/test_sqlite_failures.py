"""A SQLite database that fails the store: every failure is a CheckpointError naming the store,
what it was doing and the cause in words an operator acts on, never sqlite3's bare error."""

from __future__ import annotations

import importlib
import os
import resource
import shutil
import signal
import sqlite3
import tempfile
from pathlib import Path

import pytest

from chainkit import checkpoints
from tests.checkpoints.test_stores import _state
from tests.support import forked


def _saved(path: Path, run_id: str = "r1") -> checkpoints.SQLiteStore:
    store = checkpoints.SQLiteStore(path)
    store.save(_state(run_id, 2))
    return store


def test_a_write_lock_held_past_the_timeout_is_unavailable_naming_the_run(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = checkpoints.SQLiteStore(path, timeout=0.2)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(checkpoints.StoreUnavailableError) as raised:
            store.save(_state("r-locked", 1))
    finally:
        other.execute("ROLLBACK")
    message = str(raised.value)
    assert repr(str(path)) in message and "'r-locked'" in message
    assert "write lock" in message and "0.2 s" in message and "resum" in message
    store.save(_state("r-locked", 1))  # once the lock is let go, the same store works again
    assert len(store.load("r-locked").steps) == 1


def test_a_file_that_is_not_a_database_is_named_at_open(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.write_bytes(b"these are the notes of a meeting, not a database\n" * 200)
    with pytest.raises(checkpoints.StoreError, match="not a SQLite database") as raised:
        checkpoints.SQLiteStore(path)
    assert "open the database" in str(raised.value) and str(path) in str(raised.value)


def test_a_folder_given_as_the_file_is_named_at_open(tmp_path: Path) -> None:
    with pytest.raises(checkpoints.StoreError, match="check the path"):
        checkpoints.SQLiteStore(tmp_path)
    with pytest.raises(checkpoints.StoreError, match="check the path"):
        checkpoints.SQLiteStore(tmp_path / "no such folder" / "runs.db")


def test_tables_of_another_schema_are_named(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE chainkit_runs (run_id TEXT PRIMARY KEY, name TEXT)")
    other.commit()
    store = checkpoints.SQLiteStore(path)
    with pytest.raises(checkpoints.StoreError, match="not the ones this version") as raised:
        store.save(_state("r1", 1))
    assert "save run 'r1'" in str(raised.value)
    with pytest.raises(checkpoints.StoreError, match="not the ones this version"):
        store.load("r1")


def test_tables_dropped_while_the_store_is_open_are_named(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = _saved(path)
    other = sqlite3.connect(path)
    other.execute("DROP TABLE chainkit_steps")
    other.commit()
    with pytest.raises(checkpoints.StoreError, match=r"load run 'r1'.*chainkit_runs and"):
        store.load("r1")


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = _saved(tmp_path / "runs.db")
    store.close()
    for use in (lambda: store.load("r1"), store.runs, lambda: store.save(_state("r1", 1))):
        with pytest.raises(checkpoints.StoreError, match=r"closed \(store.close\(\)\)"):
            use()


def test_rows_edited_into_something_else_are_a_state_format_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = _saved(path)
    other = sqlite3.connect(path)
    for edit in ("'not json'", "'[1, 2]'"):
        other.execute(f"UPDATE chainkit_runs SET header = {edit} WHERE run_id = 'r1'")
        other.commit()
        with pytest.raises(checkpoints.StateFormatError, match=r"'r1'.*edited or damaged"):
            store.load("r1")
    other.execute("UPDATE chainkit_runs SET steps = 'two' WHERE run_id = 'r1'")
    other.commit()
    with pytest.raises(checkpoints.StateFormatError, match="'two' steps"):
        checkpoints.SQLiteStore(path).save(_state("r1", 3))
    deep = "[" * 100_000 + "]" * 100_000
    other.execute("UPDATE chainkit_runs SET header = ? WHERE run_id = 'r1'", (deep,))
    other.commit()
    with pytest.raises(checkpoints.StateFormatError, match="'r1'"):
        store.load("r1")


def test_text_that_is_not_unicode_is_kept_or_named(tmp_path: Path) -> None:
    store = checkpoints.SQLiteStore(tmp_path / "runs.db")
    state = _state("r1", 1)
    state.steps[0].observation = b"caf\xe9".decode("utf-8", "surrogateescape")
    store.save(state)
    assert store.load("r1").steps[0].observation == state.steps[0].observation
    with pytest.raises(checkpoints.StateFormatError, match="not valid Unicode"):
        store.save(_state("r\udce9", 1))


def _read_only_save(path: str) -> str:
    # Loaded while the process may still read the checkout, which may be its owner's alone
    # (a clone in a mktemp -d folder): nobody could not import it.
    importlib.import_module("chainkit._store.sqlite")
    if os.geteuid() == 0:  # root writes to any file: take the rights of nobody for the save
        os.setegid(65534)
        os.seteuid(65534)
    try:
        checkpoints.SQLiteStore(path).save(_state("r2", 1))
    except checkpoints.StoreError as error:
        return f"{type(error).__name__}: {error}"
    finally:
        os.seteuid(os.getuid())  # back, to write the result
    return "saved"


def test_a_read_only_database_is_named() -> None:
    folder = Path(tempfile.mkdtemp())  # not under pytest's folder, which only its owner enters
    path = folder / "runs.db"
    _saved(path).close()
    for file in folder.iterdir():
        file.chmod(0o444)
    folder.chmod(0o555)
    try:
        _, said = forked.run(_read_only_save, str(path))
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
    assert said.startswith("StoreError: ") and str(path) in said, said
    assert "read-only to this process" in said, said


def _save_on_a_full_disk(path: str) -> str:
    store = _saved(Path(path))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, as on a full disk
    size = os.path.getsize(path) + os.path.getsize(f"{path}-wal")
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 4096, size + 4096))
    big = _state("r-big", 1)
    big.inputs = {"input": "x" * 1_000_000}
    try:
        store.save(big)
    except checkpoints.StoreError as error:
        return f"{type(error).__name__}: {error}"
    return "saved"


def test_a_full_disk_is_named(tmp_path: Path) -> None:
    _, said = forked.run(_save_on_a_full_disk, str(tmp_path / "runs.db"))
    assert said.startswith("StoreError: ") and "save run 'r-big'" in said, said
    assert "disk is full" in said or "disk failed" in said, said
