"""Chat history: the messages of many conversations, each under its session id.

`ChatHistory` is the contract every history store keeps (in memory here; SQLite and PostgreSQL
in `sql_history`); memories and `chains.with_history` read and write through it only.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from chainkit._text import counted
from chainkit.memory.errors import MemoryTypeError, MemoryValueError
from chainkit.schema import Message

MAX_SESSION_ID = 256
"""The longest session id, in characters: long enough for any key a caller derives, short
enough for an index column."""


@runtime_checkable
class ChatHistory(Protocol):
    """Conversations by session id."""

    def messages(self, session_id: str, *, last: int | None = None) -> list[Message]:
        """The session's messages in the order they were appended (only the `last` ones when
        given); [] for a session never appended to."""
        ...

    def append(self, session_id: str, messages: Sequence[Message]) -> None:
        """Adds the messages at the end of the session: all or none, in order, durable on
        return. Concurrent appends to one session never interleave their messages."""
        ...

    def clear(self, session_id: str) -> None:
        """Deletes the session and its messages (nothing happens for an unknown session)."""
        ...

    def sessions(self) -> list[str]:
        """The ids of the sessions that hold messages."""
        ...

    async def amessages(self, session_id: str, *, last: int | None = None) -> list[Message]: ...

    async def aappend(self, session_id: str, messages: Sequence[Message]) -> None: ...


def check_session_id(session_id: object) -> str:
    """The session id when it is one: a non-empty str of at most MAX_SESSION_ID characters."""
    if not isinstance(session_id, str):
        raise MemoryTypeError(f"a session id must be a str, got {session_id!r:.80}")
    if not session_id:
        raise MemoryValueError("a session id must not be empty")
    if len(session_id) > MAX_SESSION_ID:
        raise MemoryValueError(
            f"a session id must be at most {MAX_SESSION_ID} characters, "
            f"got {len(session_id)}: {session_id[:40]!r}..."
        )
    return session_id


def check_last(last: object) -> int | None:
    """`last` when it is None or a count of messages (an int >= 0)."""
    if last is None:
        return None
    if isinstance(last, bool) or not isinstance(last, int):
        raise MemoryTypeError(f"last must be an int or None, got {last!r:.80}")
    if last < 0:
        raise MemoryValueError(f"last must be >= 0, got {last}")
    return last


def check_messages(messages: object) -> list[Message]:
    """The messages to append as a list, every one a Message (checked before any is kept)."""
    if isinstance(messages, (str, bytes, Message)) or not isinstance(messages, Sequence):
        raise MemoryTypeError(f"messages must be a sequence of Message, got {messages!r:.80}")
    listed = list(messages)
    for position, message in enumerate(listed):
        if not isinstance(message, Message):
            raise MemoryTypeError(
                f"messages[{position}] must be a Message, got {type(message).__name__}"
            )
    return listed


class InMemoryHistory:
    """A ChatHistory kept in this process (lost when it ends); safe to share between threads
    and event loops. It keeps the Message objects it is given, so do not change one after
    appending it."""

    def __init__(self) -> None:
        self._sessions: dict[str, list[Message]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        with self._lock:
            sessions = len(self._sessions)
        return f"InMemoryHistory({counted(sessions, 'session')})"

    def messages(self, session_id: str, *, last: int | None = None) -> list[Message]:
        check_session_id(session_id)
        count = check_last(last)
        with self._lock:
            kept = self._sessions.get(session_id, [])
            if count is None:
                return list(kept)
            return kept[len(kept) - count :] if count else []

    def append(self, session_id: str, messages: Sequence[Message]) -> None:
        check_session_id(session_id)
        added = check_messages(messages)
        if not added:
            return
        with self._lock:
            self._sessions.setdefault(session_id, []).extend(added)

    def clear(self, session_id: str) -> None:
        check_session_id(session_id)
        with self._lock:
            self._sessions.pop(session_id, None)

    def sessions(self) -> list[str]:
        with self._lock:
            return list(self._sessions)

    # Nothing here waits on I/O: the async twins answer on the loop, without a thread.
    async def amessages(self, session_id: str, *, last: int | None = None) -> list[Message]:
        return self.messages(session_id, last=last)

    async def aappend(self, session_id: str, messages: Sequence[Message]) -> None:
        self.append(session_id, messages)
