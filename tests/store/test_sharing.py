"""One database opened once (`chainkit.open_database`) and handed to every store: checkpoints
and chat history keep their tables side by side, each records its schema version, and closing
a store leaves the shared database open."""

from __future__ import annotations

import uuid

import pytest

import chainkit
from chainkit import checkpoints, memory
from chainkit._store import Database
from chainkit.schema import Message


def _store(database: Database) -> checkpoints.SQLiteStore | checkpoints.PostgresStore:
    if database.dialect == "sqlite":
        return checkpoints.SQLiteStore(database)
    return checkpoints.PostgresStore(database)


def test_every_store_shares_one_open_database(where: str) -> None:
    database = chainkit.open_database(where)
    run_id, session = f"run-{uuid.uuid4().hex}", f"chat-{uuid.uuid4().hex}"
    store = _store(database)
    store.save(checkpoints.RunState(run_id, "OneShotAgent", [], {"input": "hi"}, [], []))
    history = memory.SQLHistory(database)
    history.append(session, [Message.user("hi")])
    store.close()  # not theirs to close: the database was handed to them
    history.close()
    assert _store(database).load(run_id).inputs == {"input": "hi"}
    assert memory.SQLHistory(database).messages(session) == [Message.user("hi")]
    versions = database.run(
        "read",
        lambda c: c.execute(
            "SELECT name, version FROM chainkit_schema WHERE name IN ('checkpoints', 'history')"
        ).fetchall(),
    )
    assert sorted(map(tuple, versions)) == [("checkpoints", 1), ("history", 1)]
    database.close()


def test_a_store_of_the_other_dialect_is_refused(where: str) -> None:
    database = chainkit.open_database(where)
    wrong = checkpoints.PostgresStore if database.dialect == "sqlite" else checkpoints.SQLiteStore
    with pytest.raises(checkpoints.errors.CheckpointConfigError, match="use "):
        wrong(database)
    database.close()
