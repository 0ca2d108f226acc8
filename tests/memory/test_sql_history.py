"""SQLHistory on a real SQLite file and the real PostgreSQL: the ChatHistory contract, messages
read back exactly, appends all or nothing and in order across processes, nothing acknowledged
lost to a kill -9."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import chainkit
from chainkit import memory
from chainkit._store import open_database
from chainkit.memory.errors import MemoryTypeError, MemoryValueError
from chainkit.schema import FunctionCall, ImagePart, Message, TextPart, ToolCall
from chainkit.schema.message import ResponseMeta, TokenUsage
from tests.support import forked
from tests.support.databases import where_fixture  # noqa: F401 - the `where` fixture
from tests.support.history_children import tagged_append
from tests.support.idle_reset_proxy import idle_reset_proxy
from tests.support.modes import Mode
from tests.support.postgres import postgres_dsn


@pytest.fixture
def history(where: str) -> Iterator[memory.SQLHistory]:
    opened = memory.SQLHistory(where)
    yield opened
    opened.close()


@pytest.fixture
def sid() -> str:
    """A session id no earlier test run used (the PostgreSQL database outlives a run)."""
    return f"s-{uuid.uuid4().hex}"


def _messages(
    mode: Mode, history: memory.ChatHistory, session: str, **options: int
) -> list[Message]:
    if mode.is_async:
        return asyncio.run(history.amessages(session, **options))
    return history.messages(session, **options)


def _append(
    mode: Mode, history: memory.ChatHistory, session: str, messages: Sequence[Message]
) -> None:
    if mode.is_async:
        asyncio.run(history.aappend(session, messages))
    else:
        history.append(session, messages)


def _exchange(n: int) -> list[Message]:
    return [Message.user(f"q{n}"), Message.assistant(f"a{n}")]


def test_a_session_keeps_its_messages_in_order(
    mode: Mode, history: memory.SQLHistory, sid: str
) -> None:
    assert isinstance(history, memory.ChatHistory)
    assert _messages(mode, history, sid) == []
    _append(mode, history, sid, _exchange(1))
    _append(mode, history, f"{sid}-other", _exchange(9))
    _append(mode, history, sid, _exchange(2))
    _append(mode, history, sid, [])
    assert _messages(mode, history, sid) == _exchange(1) + _exchange(2)
    assert _messages(mode, history, sid, last=3) == _exchange(1)[1:] + _exchange(2)
    assert _messages(mode, history, sid, last=0) == []
    assert _messages(mode, history, sid, last=99) == _exchange(1) + _exchange(2)
    assert _messages(mode, history, sid, last=10**30) == _exchange(1) + _exchange(2)
    assert {sid, f"{sid}-other"} <= set(history.sessions())
    history.clear(sid)
    history.clear(f"{sid}-never")
    assert sid not in history.sessions() and f"{sid}-other" in history.sessions()
    assert _messages(mode, history, sid) == []
    assert _messages(mode, history, f"{sid}-other") == _exchange(9)


def test_messages_come_back_exactly(mode: Mode, history: memory.SQLHistory, sid: str) -> None:
    calls = [
        ToolCall(id="call_1", function=FunctionCall("lookup", '{"q": "Zürich 🌧"}')),
        ToolCall(id="call_2", function=FunctionCall("add", "{}"), index=1, extra={"x": [1, None]}),
    ]
    rich = [
        Message.system("Be brief."),
        Message.user(
            [
                TextPart("what is this?"),
                ImagePart(url="https://example.com/a.png", detail="low"),
                ImagePart(base64_data="iVBORw0KGgo=", mime_type="image/png"),
            ],
            name="ann",
        ),
        Message.assistant(
            "",
            tool_calls=calls,
            reasoning_content="think first",
            response_meta=ResponseMeta(
                finish_reason="tool_calls", usage=TokenUsage(10, 5, 15), model="m", id="r1"
            ),
        ),
        Message.tool("found: 42", tool_call_id="call_1", tool_name="lookup"),
        Message.tool("", tool_call_id="call_2"),
        Message("assistant", "naïve \u2028 line\x00end \ud800 lone", extra={"vendor": {"k": 1.5}}),
        Message.user("x" * 100_000),
    ]
    _append(mode, history, sid, rich)
    again = _messages(mode, history, sid)
    assert again == rich
    assert [m.to_dict() for m in again] == [m.to_dict() for m in rich]
    # A second store object on the same database reads the same (nothing kept in memory).
    other = memory.SQLHistory(history._db)
    assert other.messages(sid) == rich


def test_an_append_is_all_or_nothing(history: memory.SQLHistory, sid: str) -> None:
    history.append(sid, _exchange(1))
    unstorable = Message("user", "x", extra={"when": object()})
    with pytest.raises(MemoryValueError, match=r"messages\[1\]"):
        history.append(sid, [Message.user("kept?"), unstorable])
    with pytest.raises(MemoryTypeError, match=r"messages\[1\]"):
        history.append(sid, [Message.user("kept?"), "text"])  # type: ignore[list-item]
    assert history.messages(sid) == _exchange(1)


@pytest.mark.parametrize(
    ("session", "error"),
    [
        ("a\x00b", MemoryValueError),
        ("", MemoryValueError),
        ("x" * 257, MemoryValueError),
        (None, MemoryTypeError),
        (7, MemoryTypeError),
    ],
)
def test_a_session_id_that_is_none_is_refused(
    history: memory.SQLHistory, session: object, error: type[Exception]
) -> None:
    with pytest.raises(error):
        history.append(session, _exchange(1))  # type: ignore[arg-type]
    with pytest.raises(error):
        history.messages(session)  # type: ignore[arg-type]
    with pytest.raises(error):
        history.clear(session)  # type: ignore[arg-type]


def test_the_longest_and_the_oddest_session_ids_are_kept(
    history: memory.SQLHistory, sid: str
) -> None:
    for session in (
        sid + "x" * (256 - len(sid)),
        f"{sid} 'quoted'; DROP TABLE x; --",
        f"{sid}-ü-🌧",
    ):
        history.append(session, _exchange(1))
        assert history.messages(session) == _exchange(1), session


def test_many_sessions_keep_their_own_messages(history: memory.SQLHistory, sid: str) -> None:
    sessions = [f"{sid}-{n}" for n in range(150)]
    for round_ in range(2):
        for n, session in enumerate(sessions):
            history.append(session, _exchange(n * 10 + round_))
    assert set(sessions) <= set(history.sessions())
    for n, session in enumerate(sessions):
        assert history.messages(session) == _exchange(n * 10) + _exchange(n * 10 + 1)


def test_a_database_opened_once_is_shared_with_checkpoints(tmp_path: Path, sid: str) -> None:
    from chainkit import checkpoints

    database = open_database(tmp_path / "app.db")
    history = memory.SQLHistory(database)
    history.append(sid, _exchange(1))
    history.close()  # not its database: handed to it
    assert memory.SQLHistory(database).messages(sid) == _exchange(1)
    assert checkpoints.SQLiteStore(tmp_path / "app.db").runs() == []
    database.close()


def test_two_processes_appending_to_one_session_keep_every_message_in_order(
    where: str, sid: str, tmp_path: Path
) -> None:
    count, go = 150, tmp_path / "go"
    children = [
        forked.start(_append_many, where, sid, tag, count, str(go)) for tag in ("one", "two")
    ]
    go.touch()
    outcomes = [forked.finish(*child) for child in children]
    assert outcomes == [(0, count), (0, count)]
    stored = [m.content for m in memory.SQLHistory(where).messages(sid)]
    assert len(stored) == 2 * count * 3
    appends = [stored[i : i + 3] for i in range(0, len(stored), 3)]
    for tag in ("one", "two"):
        own = [chunk for chunk in appends if chunk[0].startswith(f"{tag} ")]
        assert own == [[m.content for m in tagged_append(tag, n)] for n in range(count)], tag


def test_a_kill_between_appends_loses_nothing_acknowledged(
    where: str, sid: str, tmp_path: Path
) -> None:
    acknowledged = tmp_path / "acknowledged.txt"
    acknowledged.touch()
    process, result = forked.start(_append_until_killed, where, sid, str(acknowledged))
    deadline = time.monotonic() + forked.HANG_GUARD
    while len(acknowledged.read_text().split()) < 25 and time.monotonic() < deadline:
        time.sleep(0.01)
    process.kill()  # SIGKILL: between appends, or in the middle of one
    exitcode, _ = forked.finish(process, result)
    assert exitcode == -signal.SIGKILL
    done = [int(n) for n in acknowledged.read_text().split()]
    assert len(done) >= 25
    stored = [m.content for m in memory.SQLHistory(where).messages(sid)]
    assert len(stored) % 3 == 0  # whole appends only
    appends = [stored[i : i + 3] for i in range(0, len(stored), 3)]
    assert appends == [[m.content for m in tagged_append("killed", n)] for n in range(len(appends))]
    assert len(appends) >= len(done)  # every acknowledged one (and perhaps one more)


@pytest.mark.parametrize(
    "edited",
    [
        "{",
        '{"role": "assistant", "content": "a1"} {"role": "user", "content": "more"}',
        '{"role": "assistant", "content": "a1"},{"role": "user", "content": "more"}',
        '["role", "assistant"]',
        '{"role": "wizard", "content": "a1"}',
        "",
    ],
)
def test_a_row_edited_by_hand_is_named(where: str, sid: str, edited: str) -> None:
    history = memory.SQLHistory(where)
    history.append(sid, _exchange(1))
    history._db.run(
        "edit",
        lambda c: c.execute(
            "UPDATE chainkit_history SET message = ? WHERE session_id = ? AND seq = 1",
            (edited, sid),
        ),
    )
    with pytest.raises(
        chainkit.StoreError, match=rf"message 1 of session '{sid}'.*edited or damaged"
    ):
        history.messages(sid)
    history.close()


def test_a_closed_history_says_so(where: str, sid: str) -> None:
    history = memory.SQLHistory(where)
    history.close()
    with pytest.raises(chainkit.StoreError, match=r"SQLHistory\(.*closed"):
        history.append(sid, _exchange(1))


def test_the_repr_names_the_database_without_its_password(where: str) -> None:
    history = memory.SQLHistory(where)
    assert repr(history).startswith("SQLHistory(") and "ck:ck" not in repr(history)
    history.close()


def test_what_is_not_a_database_is_refused() -> None:
    with pytest.raises(chainkit.StoreConfigError):
        memory.SQLHistory(42)  # type: ignore[arg-type]


def _append_many(where: str, session: str, tag: str, count: int, go: str) -> int:
    from tests.support.history_children import append_many

    return append_many(where, session, tag, count, go)


def _append_until_killed(where: str, session: str, acknowledged: str) -> None:
    from tests.support.history_children import append_until_killed

    append_until_killed(where, session, acknowledged)


@contextlib.contextmanager
def _through_proxy(idle_seconds: float) -> Iterator[tuple[Any, memory.SQLHistory]]:
    """A history whose connections go through an idle_reset_proxy to the test server."""
    dsn = postgres_dsn()
    import psycopg

    port = int(str(psycopg.conninfo.conninfo_to_dict(dsn).get("port") or 5432))
    with idle_reset_proxy(port, idle_seconds) as proxy:
        proxied = psycopg.conninfo.make_conninfo(dsn, host="127.0.0.1", port=proxy.port)
        history = memory.SQLHistory(proxied)
        yield proxy, history
        history.close()


def test_a_postgres_connection_dropped_while_idle_is_reconnected(sid: str) -> None:
    with _through_proxy(idle_seconds=0.2) as (proxy, history):
        for n in range(3):
            history.append(sid, _exchange(n))
            time.sleep(0.4)  # longer idle than the proxy allows: the next request is reset
        assert history.messages(sid) == _exchange(0) + _exchange(1) + _exchange(2)
        assert proxy.resets >= 3


def test_an_append_whose_commit_was_not_acknowledged_is_not_made_twice(sid: str) -> None:
    with _through_proxy(idle_seconds=600) as (proxy, history):
        history.append(sid, _exchange(1))
        proxy.cut_after = b"COMMIT"
        history.append(sid, _exchange(2))
        assert proxy.cut_after is None  # cut: the reply never came, the append was retried
        assert memory.SQLHistory(postgres_dsn()).messages(sid) == _exchange(1) + _exchange(2)


def test_async_calls_wait_for_the_database_in_a_worker_not_on_the_event_loop(
    history: memory.SQLHistory, sid: str
) -> None:
    held, release, gave_up = threading.Event(), threading.Event(), threading.Event()

    def hold_the_database() -> None:
        with history._db.held():
            held.set()
            if not release.wait(10):
                gave_up.set()

    holder = threading.Thread(target=hold_the_database)
    holder.start()
    assert held.wait(10)

    async def main() -> bool:
        appending = asyncio.ensure_future(history.aappend(sid, _exchange(1)))
        loading = asyncio.ensure_future(history.amessages(sid))
        await asyncio.sleep(0.01)  # the loop goes on while both wait for the database
        answered = not gave_up.is_set()
        release.set()
        await appending
        await loading
        return answered

    assert asyncio.run(main())
    holder.join()
    assert history.messages(sid) == _exchange(1)


def test_a_database_locked_past_its_timeout_is_unavailable_and_nothing_is_kept(
    tmp_path: Path, sid: str
) -> None:
    import sqlite3

    path = tmp_path / "history.db"
    database = chainkit.open_database(path, timeout=0.2)
    history = memory.SQLHistory(database)
    history.append(sid, _exchange(1))
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's write, not ending
    with pytest.raises(chainkit.StoreUnavailableError, match=r"0\.2 s") as raised:
        history.append(sid, _exchange(2))
    assert "SQLHistory(" in str(raised.value) and "before this call" in str(raised.value)
    other.execute("ROLLBACK")
    other.close()
    assert history.messages(sid) == _exchange(1)
    history.append(sid, _exchange(2))  # the same object works again once the lock is gone
    assert history.messages(sid) == _exchange(1) + _exchange(2)
    database.close()


def test_a_chain_with_history_keeps_its_sessions_across_history_objects(
    mode: Mode, where: str, sid: str
) -> None:
    from chainkit import chains, llms, prompts

    seen: list[int] = []

    def model_sees(messages: list[Message]) -> list[Message]:
        seen.append(len(messages))
        return messages

    prompt = prompts.ChatPromptTemplate(
        [prompts.MessagesPlaceholder("history"), ("user", "{input}")]
    )

    def chat(reply: str) -> chains.Chain:
        pipeline = prompt | model_sees | llms.FakeLLM([reply]) | (lambda m: m.content)
        return chains.with_history(pipeline, memory.SQLHistory(where)).session(sid)

    assert mode.run(chat("Hello!"), "hello") == "Hello!"
    assert mode.run(chat("You said hello."), "what did I say?") == "You said hello."  # anew
    assert seen == [1, 3]  # the second call got the first exchange from the database
    stored = memory.SQLHistory(where).messages(sid)
    assert [(m.role, m.content) for m in stored] == [
        ("user", "hello"),
        ("assistant", "Hello!"),
        ("user", "what did I say?"),
        ("assistant", "You said hello."),
    ]
