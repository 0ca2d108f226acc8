"""SQLCache on real SQLite files and the real PostgreSQL: replies kept across objects and
processes, the least recently used pushed out, a TTL, and a model's calls answered from it."""

from __future__ import annotations

import asyncio
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chainkit import llms
from chainkit._errors import StoreError
from chainkit._store import open_database, open_postgres
from chainkit.llms import OpenAI, SQLCache
from chainkit.llms.cache import CachedReply
from chainkit.schema import FunctionCall, Message, TokenUsage, ToolCall
from chainkit.schema.message import ResponseMeta
from tests.support.modes import Mode
from tests.support.openai_server import OpenAIServer, Reply
from tests.support.postgres import postgres_dsn, require_psycopg

QUESTION = [Message.user("What is the capital of France?")]
REPLY = Message(
    "assistant",
    "Paris — ☃ \ud800 is the capital.",
    tool_calls=[ToolCall("call_1", FunctionCall("lookup", '{"city": "Paris"}'))],
    response_meta=ResponseMeta("tool_calls", TokenUsage(11, 7, 18), "loopback", "chatcmpl-1"),
    extra={"logprobs": [0.5]},
)


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "cache.db")
        return
    dsn = postgres_dsn()
    SQLCache(dsn).clear()
    yield dsn
    SQLCache(dsn).clear()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_a_reply_round_trips_exactly_with_its_pieces(where: str):
    cache = SQLCache(where)
    pieces = ("Paris — ☃", " \ud800 is", " the capital.")
    cache.put("k", CachedReply(REPLY, pieces))
    found = SQLCache(where).get("k")  # another object: another connection
    assert found == CachedReply(REPLY, pieces)
    assert cache.get("missing") is None
    cache.close()


def test_the_least_recently_used_goes_first(where: str):
    clock = Clock()
    cache = SQLCache(where, max_entries=2, clock=clock)
    for key in "abc":
        clock.now += 1
        if key == "c":
            assert cache.get("a") is not None  # used last: b is the oldest now
            clock.now += 1
        cache.put(key, CachedReply(Message.assistant(key)))
    assert cache.get("b") is None
    assert [cache.get(k).message.content for k in "ac"] == ["a", "c"]  # type: ignore[union-attr]
    assert cache.stats() == llms.CacheStats(entries=2, hits=3, misses=1)


def test_an_entry_is_forgotten_after_its_ttl(where: str):
    clock = Clock()
    cache = SQLCache(where, ttl=60, clock=clock)
    cache.put("k", CachedReply(Message.assistant("v")))
    clock.now += 59.9
    assert cache.get("k") is not None
    clock.now += 0.1
    assert cache.get("k") is None
    assert cache.stored().entries == 0


def test_clear_and_stored_figures(where: str):
    cache = SQLCache(where)
    cache.put("a", CachedReply(Message.assistant("one")))
    cache.put("b", CachedReply(Message.assistant("two")))
    cache.get("a")
    cache.get("a")
    stored = cache.stored()
    assert (stored.entries, stored.hits) == (2, 2)
    assert stored.oldest is not None and stored.last_used is not None
    cache.clear()
    assert cache.stored().entries == 0


def test_another_process_reads_what_one_kept(where: str):
    SQLCache(where).put("k", CachedReply(Message.assistant("kept"), ("ke", "pt")))
    script = (
        "import sys; from chainkit.llms import SQLCache; "
        "found = SQLCache(sys.argv[1]).get('k'); print(found.message.content, found.pieces)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", script, where], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.stdout.strip() == "kept ('ke', 'pt')", done.stderr


def test_a_model_answers_from_a_sql_cache(
    where: str, mode: Mode, make_openai: Callable[..., OpenAI], openai_server: OpenAIServer
):
    openai_server.push(Reply("The capital of France is Paris.", chunk_size=5))
    first: list[str] = []
    again: list[str] = []
    llm = make_openai(temperature=0, cache=SQLCache(where))
    original = mode.generate(llm, QUESTION, streaming_func=first.append)
    later = make_openai(temperature=0, cache=SQLCache(where))  # as a later process would
    hit = mode.generate(later, QUESTION, streaming_func=again.append)
    assert len(openai_server.chat_requests()) == 1
    assert again == first and hit.content == original.content
    assert hit.response_meta is not None and hit.response_meta.cached


def test_tables_of_a_newer_version_are_refused(tmp_path: Path):
    path = tmp_path / "cache.db"
    SQLCache(path)
    import sqlite3

    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE chainkit_schema SET version = 99 WHERE name = 'llm_cache'")
    with pytest.raises(StoreError, match="schema version 99"):
        SQLCache(path)


def test_the_cache_is_named_without_its_password():
    require_psycopg()
    database = open_postgres("postgresql://ck:s3cret-pw@127.0.0.1:1/nowhere", reconnect_seconds=0)
    with pytest.raises(StoreError) as raised:
        SQLCache(database)
    assert str(raised.value).startswith("SQLCache(ck@127.0.0.1:1/nowhere) could not open")
    assert "s3cret-pw" not in str(raised.value)


def test_concurrent_identical_async_calls_make_one_model_call(
    where: str, make_openai: Callable[..., OpenAI], openai_server: OpenAIServer, arun: Any
):
    openai_server.push("Paris.")
    llm = make_openai(temperature=0, cache=SQLCache(where))

    async def main() -> list[Message]:
        return await asyncio.gather(*(llm.agenerate(QUESTION) for _ in range(200)))

    replies = arun(llm, main())
    assert len(openai_server.chat_requests()) == 1
    assert [reply.content for reply in replies] == ["Paris."] * 200


def test_a_pickled_cache_opens_the_same_database(tmp_path: Path):
    cache = SQLCache(tmp_path / "cache.db", max_entries=7, ttl=60)
    cache.put("k", CachedReply(Message.assistant("kept")))
    copy = pickle.loads(pickle.dumps(llms.FakeLLM(["x"], cache=cache))).cache
    assert isinstance(copy, SQLCache) and (copy.max_entries, copy.ttl) == (7, 60.0)
    assert copy.get("k") is not None
    given = SQLCache(open_database(tmp_path / "other.db"))
    with pytest.raises(llms.errors.ModelTypeError, match="give SQLCache the database's path"):
        pickle.dumps(given)
