"""SQLHistory: chat histories kept in a SQLite file or a PostgreSQL database, through the store
layer, so that conversations outlive the process and many processes share them."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from chainkit._errors import StoreError
from chainkit._store import Caller, Cursor, Database, json_text, open_database
from chainkit._threads import in_thread
from chainkit.memory.errors import MemoryValueError
from chainkit.memory.history import check_last, check_messages, check_session_id
from chainkit.schema import Message

COMPONENT, VERSION = "history", 1
"""The name and schema version of the table in the database's chainkit_schema table."""
_TABLE = {
    dialect: [
        "CREATE TABLE IF NOT EXISTS chainkit_history (session_id TEXT NOT NULL, "
        f"seq {kind} NOT NULL, message TEXT NOT NULL, append_id TEXT NOT NULL, "
        "PRIMARY KEY (session_id, seq))"
    ]
    for dialect, kind in (("sqlite", "INTEGER"), ("postgresql", "BIGINT"))
}
_NEXT_SEQ = "SELECT COALESCE(MAX(seq), -1) + 1 FROM chainkit_history WHERE session_id = ?"
_INSERT = "INSERT INTO chainkit_history (session_id, seq, message, append_id) VALUES (?, ?, ?, ?)"
_FOUND_APPEND = "SELECT 1 FROM chainkit_history WHERE session_id = ? AND append_id = ? LIMIT 1"
_ALL = "SELECT seq, message FROM chainkit_history WHERE session_id = ? ORDER BY seq"
_LAST = (
    "SELECT seq, message FROM (SELECT seq, message FROM chainkit_history WHERE session_id = ? "
    "ORDER BY seq DESC LIMIT ?) AS recent ORDER BY seq"
)


class SQLHistory:
    """A ChatHistory in the database `where` names: a SQLite file's path (made if missing), a
    `postgresql://` DSN, or a database already open that other stores share.

    Each message is a row (session id, its place in the session, the message as JSON:
    roles, names, tool calls and their ids, content parts, images by their reference, all
    read back as they were written). An append is one transaction: all its messages or
    none, after every message appended before it, in order, whichever process appends;
    durable when it returns (on SQLite, through a process crash; a power loss too with the
    database opened with synchronous="FULL"). A failure of the database raises StoreError
    naming this history (StoreUnavailableError when it is out of reach: nothing of that
    call was stored)."""

    def __init__(self, where: str | os.PathLike[str] | Database) -> None:
        self._db = open_database(where)
        self._owned = self._db is not where
        self._name = f"SQLHistory({self._db.where})"
        self._caller = Caller(
            self._name,
            "chainkit_history",
            "the session holds what it held before this call; try again",
            _bad_text,
        )
        try:
            self._db.ensure_table(COMPONENT, VERSION, _TABLE, by=self._caller)
        except BaseException:
            if self._owned:
                self._db.close()
            raise

    def __repr__(self) -> str:
        return self._name

    def close(self) -> None:
        """Closes the database if this history opened it (not one it was handed)."""
        if self._owned:
            self._db.close()

    def messages(self, session_id: str, *, last: int | None = None) -> list[Message]:
        _check_session_id(session_id)
        count = check_last(last)
        if count == 0:
            return []
        if count is not None and count > _MOST_ROWS:  # more than any session holds: all
            count = None

        def read(cursor: Cursor) -> list[Any]:
            if count is None:
                return cursor.execute(_ALL, (session_id,)).fetchall()
            return cursor.execute(_LAST, (session_id, count)).fetchall()

        rows = self._db.run(f"read session {session_id!r}", read, by=self._caller, write=False)
        return [self._message(session_id, seq, text) for seq, text in rows]

    def append(self, session_id: str, messages: Sequence[Message]) -> None:
        _check_session_id(session_id)
        texts = [
            _text(position, message) for position, message in enumerate(check_messages(messages))
        ]
        if not texts:
            return
        import uuid  # loaded by the first append, not with memory

        token = uuid.uuid4().hex

        def append(cursor: Cursor) -> None:
            # A try whose COMMIT may have happened (the reply lost with the connection) finds
            # its rows by their token rather than appending them twice.
            if cursor.retried and cursor.execute(_FOUND_APPEND, (session_id, token)).fetchone():
                return
            self._db.lock_key(cursor, f"chainkit_history:{session_id}")
            (start,) = cursor.execute(_NEXT_SEQ, (session_id,)).fetchone()
            rows = [(session_id, start + i, text, token) for i, text in enumerate(texts)]
            cursor.executemany(_INSERT, rows)

        self._db.run(f"append to session {session_id!r}", append, by=self._caller)

    def clear(self, session_id: str) -> None:
        _check_session_id(session_id)
        self._db.run(
            f"clear session {session_id!r}",
            lambda cursor: cursor.execute(
                "DELETE FROM chainkit_history WHERE session_id = ?", (session_id,)
            ),
            by=self._caller,
        )

    def sessions(self) -> list[str]:
        rows = self._db.run(
            "list the sessions",
            lambda cursor: cursor.execute(
                "SELECT DISTINCT session_id FROM chainkit_history ORDER BY session_id"
            ).fetchall(),
            by=self._caller,
            write=False,
        )
        return [session_id for (session_id,) in rows]

    # The database is waited on in a worker thread, never on the event loop.
    async def amessages(self, session_id: str, *, last: int | None = None) -> list[Message]:
        return await in_thread(lambda: self.messages(session_id, last=last))

    async def aappend(self, session_id: str, messages: Sequence[Message]) -> None:
        await in_thread(self.append, session_id, messages)

    def _message(self, session_id: str, seq: object, text: object) -> Message:
        try:
            return Message.from_dict(json.loads(text))  # type: ignore[arg-type]
        except (TypeError, ValueError, RecursionError) as error:  # MessageFormatError is both
            raise StoreError(
                f"{self._name}: message {seq!r} of session {session_id!r} is not the JSON of a "
                f"message chainkit writes ({error}): the database was edited or damaged"
            ) from None


_MOST_ROWS = 2**62
"""A count of rows beyond any table's, and within both databases' integers."""


def _check_session_id(session_id: object) -> None:
    """A session id as every history takes it, and that both databases store alike: no NUL
    character (which PostgreSQL refuses, and SQLite would keep)."""
    if "\x00" in check_session_id(session_id):
        raise MemoryValueError(f"a session id must not hold a NUL character: {session_id!r:.80}")


def _text(position: int, message: Message) -> str:
    """The message as the JSON of its row."""
    try:
        return json_text(message.to_dict())
    except (TypeError, ValueError) as error:  # an `extra` holding what JSON cannot
        raise MemoryValueError(
            f"messages[{position}] cannot be stored as JSON ({error}): its extra fields must "
            "be JSON values"
        ) from None


def _bad_text(doing: str, error: UnicodeEncodeError) -> MemoryValueError:
    return MemoryValueError(
        f"could not {doing}: the session id is not valid Unicode text ({error.reason})"
    )
