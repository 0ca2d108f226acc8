"""The response cache through a model's calls, over the loopback OpenAI-compatible server: a
hit makes no request and is an llm run like any other (events, streamed tokens, usage counted
as cached), what is never kept, and one model call for concurrent identical calls."""

from __future__ import annotations

import asyncio
import io
import pickle
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chainkit import chains, llms
from chainkit._errors import StoreError
from chainkit.callbacks import LogHandler, TraceFile, UsageTotals
from chainkit.callbacks.trace_view import format_tree, read_trace
from chainkit.llms import InMemoryCache, OpenAI, _cached_call
from chainkit.llms.cache import CachedReply, set_cache
from chainkit.prompts import PromptTemplate
from chainkit.schema import Message
from tests.support.event_recorder import EventRecorder
from tests.support.modes import Mode
from tests.support.openai_server import Fault, OpenAIServer, Reply

QUESTION = [Message.user("What is the capital of France?")]


@pytest.fixture(autouse=True)
def no_default_cache() -> Iterator[None]:
    yield
    set_cache(None)


@pytest.fixture
def cache() -> InMemoryCache:
    return InMemoryCache()


@pytest.fixture
def cached_llm(make_openai: Callable[..., OpenAI], cache: InMemoryCache) -> OpenAI:
    return make_openai(temperature=0, cache=cache)


def test_a_repeated_call_is_answered_from_the_cache(
    mode: Mode, cached_llm: OpenAI, openai_server: OpenAIServer, cache: InMemoryCache
):
    openai_server.push("Paris.")
    first = mode.generate(cached_llm, QUESTION)
    second = mode.generate(cached_llm, QUESTION)
    assert len(openai_server.chat_requests()) == 1
    assert second.content == first.content == "Paris."
    assert first.response_meta is not None and not first.response_meta.cached
    assert second.response_meta is not None and second.response_meta.cached
    assert second.response_meta.usage == first.response_meta.usage
    assert cache.stats() == llms.CacheStats(entries=1, hits=1, misses=1)


def test_a_hit_is_an_llm_run_whose_end_is_marked_cached(
    mode: Mode, cached_llm: OpenAI, openai_server: OpenAIServer, events: EventRecorder
):
    openai_server.push("Paris.")
    mode.generate(cached_llm, QUESTION)
    mode.generate(cached_llm, QUESTION, callbacks=events)
    names = [event[0] for event in events.heard()]
    assert names == ["llm_start", "llm_end"]
    (_, messages, options), (_, reply) = events.heard()
    assert messages == QUESTION and options["temperature"] == 0
    assert reply.content == "Paris." and reply.response_meta.cached


def test_usage_totals_count_a_hit_as_cached_and_unpaid(
    mode: Mode, cached_llm: OpenAI, openai_server: OpenAIServer
):
    openai_server.push("Paris.")
    totals = UsageTotals(prices={"loopback-model": (1_000_000.0, 1_000_000.0)})
    mode.generate(cached_llm, QUESTION, callbacks=totals)
    mode.generate(cached_llm, QUESTION, callbacks=totals)
    mode.generate(cached_llm, QUESTION, callbacks=totals)
    usage = totals.models["loopback-model"]
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (1, 11, 7)
    assert (usage.cache_hits, usage.cached_input_tokens, usage.cached_output_tokens) == (2, 22, 14)
    assert totals.cost() == 18.0  # the one paid call
    assert "2 replies from the cache (22 in, 14 out, not paid)" in totals.summary()


def test_a_cached_stream_equals_the_original_token_for_token(
    mode: Mode, cached_llm: OpenAI, openai_server: OpenAIServer
):
    openai_server.push(Reply("The capital of France is Paris.", chunk_size=3))
    first: list[str] = []
    again: list[str] = []
    events = EventRecorder()
    original = mode.generate(cached_llm, QUESTION, streaming_func=first.append)
    hit = mode.generate(cached_llm, QUESTION, streaming_func=again.append, callbacks=events)
    assert len(openai_server.chat_requests()) == 1
    assert first == ["The", " ca", "pit", "al ", "of ", "Fra", "nce", " is", " Pa", "ris", "."]
    assert again == first
    assert [event[1] for event in events.heard("streaming_func")] == first
    assert hit.content == original.content


def test_a_reply_not_streamed_streams_from_the_cache_word_by_word(
    mode: Mode, cached_llm: OpenAI, openai_server: OpenAIServer
):
    openai_server.push("The capital is  Paris.\n")
    mode.generate(cached_llm, QUESTION)
    pieces: list[str] = []
    mode.generate(cached_llm, QUESTION, streaming_func=pieces.append)
    assert pieces == ["The", " capital", " is", "  Paris.", "\n"]


def test_chains_stream_shows_a_hit_as_tokens(cached_llm: OpenAI, openai_server: OpenAIServer):
    openai_server.push(Reply("Paris is the capital.", chunk_size=5))
    chain = chains.LLMChain(PromptTemplate.from_template("Capital of {country}?"), cached_llm)
    first = [e.data["text"] for e in chains.stream(chain, "France") if e.kind == "token"]
    again = [e.data["text"] for e in chains.stream(chain, "France") if e.kind == "token"]
    assert len(openai_server.chat_requests()) == 1
    assert first == again == ["Paris", " is t", "he ca", "pital", "."]


def test_a_sampled_reply_is_kept_only_when_the_cache_is_told_to(
    mode: Mode, make_openai: Callable[..., OpenAI], openai_server: OpenAIServer
):
    openai_server.push("one", "two", "three")
    unsure = make_openai(cache=InMemoryCache())  # no temperature: the server's default, 1
    hot = make_openai(cache=InMemoryCache(), temperature=0.7)
    assert mode.generate(unsure, QUESTION).content == "one"
    assert mode.generate(hot, QUESTION).content == "two"
    assert mode.generate(hot, QUESTION, temperature=0).content == "three"
    assert len(openai_server.chat_requests()) == 3
    openai_server.push("sampled")
    told = make_openai(cache=InMemoryCache(cache_sampled=True), temperature=0.7)
    assert mode.generate(told, QUESTION).content == "sampled"
    assert mode.generate(told, QUESTION).content == "sampled"
    assert len(openai_server.chat_requests()) == 4


def test_a_model_error_is_never_kept(mode: Mode, cached_llm: OpenAI, openai_server: OpenAIServer):
    openai_server.fail(Fault.http(400, "bad request"))
    with pytest.raises(llms.ModelStatusError):
        mode.generate(cached_llm, QUESTION)
    openai_server.push("Paris.")
    assert mode.generate(cached_llm, QUESTION).content == "Paris."


def test_a_refusal_is_never_kept(mode: Mode, cached_llm: OpenAI, openai_server: OpenAIServer):
    openai_server.push(Reply(refusal="I can't help with that."), "Paris.")
    with pytest.raises(llms.ModelRefusalError):
        mode.generate(cached_llm, QUESTION)
    assert mode.generate(cached_llm, QUESTION).content == "Paris."
    assert len(openai_server.chat_requests()) == 2


def test_a_stream_cut_short_is_never_kept(
    mode: Mode, make_openai: Callable[..., OpenAI], openai_server: OpenAIServer
):
    llm = make_openai(temperature=0, cache=InMemoryCache(), max_attempts=1)
    openai_server.fail(Fault.truncate(after_chunks=2))
    openai_server.push("The capital of France is Paris.")  # the fault shows a part of it
    with pytest.raises(llms.ModelError):
        mode.generate(llm, QUESTION, streaming_func=lambda chunk: None)
    assert mode.generate(llm, QUESTION).content == "The capital of France is Paris."
    assert len(openai_server.chat_requests()) == 2


@pytest.mark.parametrize(
    "reply",
    [Reply("", finish_reason="stop"), Reply("Par", finish_reason="content_filter")],
    ids=["empty", "content_filter"],
)
def test_an_empty_or_filtered_reply_is_never_kept(
    mode: Mode, cached_llm: OpenAI, openai_server: OpenAIServer, reply: Reply
):
    openai_server.push(reply, "Paris.")
    mode.generate(cached_llm, QUESTION)
    assert mode.generate(cached_llm, QUESTION).content == "Paris."


def test_a_retried_stream_keeps_the_pieces_of_the_attempt_that_answered(
    cached_llm: OpenAI, openai_server: OpenAIServer
):
    openai_server.fail(Fault.cut(after_chunks=3))
    openai_server.push(Reply("The capital of France is Paris.", chunk_size=6))
    first: list[str] = []
    cached_llm.generate(QUESTION, streaming_func=first.append)
    again: list[str] = []
    cached_llm.generate(QUESTION, streaming_func=again.append)
    assert len(openai_server.chat_requests()) == 2
    assert "".join(again) == "The capital of France is Paris."
    assert again == ["The ca", "pital ", "of Fra", "nce is", " Paris", "."]


def test_the_default_cache_serves_every_model_but_one_that_opts_out(
    mode: Mode, make_openai: Callable[..., OpenAI], openai_server: OpenAIServer
):
    llms.set_cache(InMemoryCache())
    llm = make_openai(temperature=0)
    out = make_openai(temperature=0, cache=False)
    openai_server.push("Paris.", "Paris!", "Paris?")
    assert mode.generate(llm, QUESTION).content == "Paris."
    assert mode.generate(llm, QUESTION).content == "Paris."
    assert mode.generate(out, QUESTION).content == "Paris!"
    assert mode.generate(out, QUESTION).content == "Paris?"
    llms.set_cache(None)
    openai_server.push("Lyon?")
    assert mode.generate(llm, QUESTION).content == "Lyon?"


def test_a_cache_setting_of_the_wrong_kind_is_refused(make_openai: Callable[..., OpenAI]):
    with pytest.raises(llms.errors.ModelTypeError, match=r"give a cache .*set_cache"):
        make_openai(cache=True)
    with pytest.raises(llms.errors.ModelTypeError, match="set_cache takes a ResponseCache"):
        llms.set_cache({})  # type: ignore[arg-type]


def test_the_caller_owns_each_reply(mode: Mode, cached_llm: OpenAI, openai_server: OpenAIServer):
    openai_server.push("Paris.")
    first = mode.generate(cached_llm, QUESTION)
    first.content = "changed"
    second = mode.generate(cached_llm, QUESTION)
    second.content = "changed too"
    assert mode.generate(cached_llm, QUESTION).content == "Paris."


def test_a_thousand_concurrent_identical_async_calls_make_one_model_call(
    cached_llm: OpenAI, openai_server: OpenAIServer, arun: Any
):
    openai_server.push("Paris.")

    async def main() -> list[Message]:
        calls = [cached_llm.agenerate(QUESTION) for _ in range(1000)]
        return await asyncio.gather(*calls)

    replies = arun(cached_llm, main())
    assert len(openai_server.chat_requests()) == 1
    assert {reply.content for reply in replies} == {"Paris."}
    assert sum(not reply.response_meta.cached for reply in replies) == 1
    assert len({id(reply) for reply in replies}) == 1000  # each caller owns its reply


def test_concurrent_identical_calls_in_threads_make_one_model_call(
    cached_llm: OpenAI, openai_server: OpenAIServer
):
    # The leader's stream pauses after its first piece until every other thread waits.
    openai_server.push(Reply("Paris is the capital.", chunk_size=5, pause_after=1))
    started = threading.Event()
    replies: list[Message] = []

    def ask() -> None:
        replies.append(cached_llm.generate(QUESTION, streaming_func=lambda _: started.set()))

    threads = [threading.Thread(target=ask) for _ in range(20)]
    threads[0].start()
    assert started.wait(10)
    for thread in threads[1:]:
        thread.start()
    _wait_for_waiters(19)
    openai_server.resume.set()
    for thread in threads:
        thread.join(30)
    assert len(openai_server.chat_requests()) == 1
    assert [reply.content for reply in replies] == ["Paris is the capital."] * 20


def _wait_for_waiters(count: int) -> None:
    """Until `count` calls wait on a flight (read from the flight table, no sleeping guess)."""
    from chainkit.llms import _cached_call

    for _ in range(10_000):
        flights = list(_cached_call._flights._by_key.values())
        if flights and flights[0].waiters >= count:
            return
        threading.Event().wait(0.001)
    raise AssertionError(f"{count} calls never waited")


def test_waiters_raise_the_leaders_model_error_and_nothing_is_kept(
    cached_llm: OpenAI, openai_server: OpenAIServer, arun: Any
):
    openai_server.fail(Fault.http(400, "bad request"))

    async def main() -> list[Any]:
        calls = [cached_llm.agenerate(QUESTION) for _ in range(50)]
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = arun(cached_llm, main())
    assert len(openai_server.chat_requests()) == 1
    assert all(isinstance(outcome, llms.ModelStatusError) for outcome in outcomes)
    assert len({id(outcome) for outcome in outcomes}) == 50
    assert "identical call" in "".join(outcomes[1].__notes__)
    openai_server.push("Paris.")
    assert cached_llm.generate(QUESTION).content == "Paris."


def test_waiters_try_again_when_the_leader_is_cancelled(
    cached_llm: OpenAI, openai_server: OpenAIServer, arun: Any
):
    openai_server.push(Reply("Paris.", pause_after=0), "Paris.")

    async def main() -> list[Any]:
        leader = asyncio.create_task(cached_llm.agenerate(QUESTION, streaming_func=print))
        await asyncio.sleep(0)
        waiters = [asyncio.create_task(cached_llm.agenerate(QUESTION)) for _ in range(5)]
        await asyncio.sleep(0)
        leader.cancel()
        return await asyncio.gather(*waiters)

    replies = arun(cached_llm, main())
    openai_server.resume.set()
    assert [reply.content for reply in replies] == ["Paris."] * 5
    assert [reply.response_meta.cached for reply in replies].count(False) == 1  # a new leader


def test_in_memory_cache_pushes_out_the_least_recently_used():
    cache = InMemoryCache(max_entries=2)
    for key in "abc":
        if key == "c":
            assert cache.get("a") is not None  # a is used: b is now the oldest
        cache.put(key, CachedReply(Message.assistant(key)))
    assert cache.get("b") is None
    assert [cache.get(key).message.content for key in "ac"] == ["a", "c"]  # type: ignore[union-attr]


def test_in_memory_cache_forgets_an_entry_after_its_ttl():
    now = [100.0]
    cache = InMemoryCache(ttl=10, clock=lambda: now[0])
    cache.put("k", CachedReply(Message.assistant("v"), ("v",)))
    now[0] = 109.9
    assert cache.get("k") == CachedReply(Message.assistant("v"), ("v",))
    now[0] = 110.0
    assert cache.get("k") is None
    assert len(cache) == 0


def test_in_memory_cache_is_safe_across_threads():
    cache = InMemoryCache(max_entries=50)

    def work(worker: int) -> None:
        for n in range(500):
            cache.put(f"{worker}-{n}", CachedReply(Message.assistant(str(n))))
            cache.get(f"{worker}-{n - 1}")

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats = cache.stats()
    assert stats.entries == 50 and stats.hits + stats.misses == 8 * 500


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({"max_entries": 0}, llms.errors.ModelConfigError, "max_entries must be 1 or more"),
        ({"max_entries": "9"}, llms.errors.ModelTypeError, "max_entries must be a whole"),
        ({"ttl": -1}, llms.errors.ModelConfigError, "ttl must be a finite number"),
        ({"ttl": float("inf")}, llms.errors.ModelConfigError, "ttl must be a finite"),
        ({"ttl": "1h"}, llms.errors.ModelTypeError, "ttl must be seconds"),
        ({"cache_sampled": 1}, llms.errors.ModelTypeError, "cache_sampled must be True"),
    ],
)
def test_in_memory_cache_refuses_bad_settings(
    settings: dict[str, Any], error: type[Exception], match: str
):
    with pytest.raises(error, match=match):
        InMemoryCache(**settings)


def test_the_log_and_the_trace_show_a_hit_as_from_the_cache(
    cached_llm: OpenAI, openai_server: OpenAIServer, tmp_path: Path
):
    openai_server.push("Paris.")
    log = io.StringIO()
    trace = tmp_path / "run.jsonl"
    with TraceFile(trace) as traced:
        cached_llm.generate(QUESTION, callbacks=[traced, LogHandler(log)])
        cached_llm.generate(QUESTION, callbacks=[traced, LogHandler(log)])
    ends = [line for line in log.getvalue().splitlines() if "llm end" in line]
    assert "from the cache" not in ends[0] and "from the cache" in ends[1]
    first, hit = (line for line in format_tree(read_trace(trace)).splitlines())
    assert "11+7 tokens" in first and "from the cache" not in first
    assert "tokens" not in hit and "from the cache" in hit


def test_a_pickled_in_memory_cache_starts_empty_with_the_same_settings():
    cache = InMemoryCache(5, ttl=30, cache_sampled=True)
    cache.put("k", CachedReply(Message.assistant("v")))
    model = pickle.loads(pickle.dumps(llms.FakeLLM(["x"], cache=cache)))
    copy = model.cache
    assert isinstance(copy, InMemoryCache) and copy is not cache
    assert (copy.max_entries, copy.ttl, copy.cache_sampled, len(copy)) == (5, 30.0, True, 0)


class FailingToKeep(InMemoryCache):
    def put(self, key: str, reply: CachedReply) -> None:
        raise StoreError("SQLCache('full.db') could not keep a reply: the disk is full")


def test_a_cache_that_fails_to_keep_a_reply_logs_it_and_the_call_returns_the_reply(
    mode: Mode,
    make_openai: Callable[..., OpenAI],
    openai_server: OpenAIServer,
    caplog: pytest.LogCaptureFixture,
):
    llm = make_openai(temperature=0, cache=FailingToKeep())
    openai_server.push("Paris.", "Paris!")
    assert mode.generate(llm, QUESTION).content == "Paris."
    assert "could not keep a reply: StoreError: SQLCache('full.db')" in caplog.text
    assert mode.generate(llm, QUESTION).content == "Paris!"


@pytest.mark.timeout(60)
def test_a_sync_call_never_waits_for_a_leader_in_its_own_thread(
    cached_llm: OpenAI, openai_server: OpenAIServer, arun: Any
):
    # An async call leads, paused mid-stream; a sync call on the same event loop's thread
    # (blocking code in a coroutine) would block the very loop the leader needs.
    openai_server.push(Reply("Paris.", pause_after=0), "Paris!")

    async def main() -> tuple[Message, Message]:
        leader = asyncio.create_task(cached_llm.agenerate(QUESTION, streaming_func=print))
        while not _cached_call._flights._by_key:
            await asyncio.sleep(0)
        alone = cached_llm.generate(QUESTION)  # blocking the loop, on purpose
        openai_server.resume.set()
        return alone, await leader

    alone, led = arun(cached_llm, main())  # without the rule: never, the loop blocked
    assert {alone.content, led.content} == {"Paris.", "Paris!"}
    assert len(openai_server.chat_requests()) == 2


@pytest.mark.timeout(60)
def test_async_calls_wait_for_a_leader_in_another_thread_and_a_cancelled_one_leaves(
    cached_llm: OpenAI, openai_server: OpenAIServer, arun: Any
):
    openai_server.push(Reply("Paris is the capital.", chunk_size=5, pause_after=1))
    started = threading.Event()
    led: list[Message] = []
    leader = threading.Thread(
        target=lambda: led.append(
            cached_llm.generate(QUESTION, streaming_func=lambda _: started.set())
        )
    )
    leader.start()
    assert started.wait(10)

    async def main() -> list[Any]:
        waiters = [asyncio.create_task(cached_llm.agenerate(QUESTION)) for _ in range(10)]
        while (
            _cached_call._flights._by_key
            and next(iter(_cached_call._flights._by_key.values())).waiters < 10
        ):
            await asyncio.sleep(0.001)
        waiters[0].cancel()
        openai_server.resume.set()
        return await asyncio.gather(*waiters, return_exceptions=True)

    outcomes = arun(cached_llm, main())
    leader.join(30)
    assert isinstance(outcomes[0], asyncio.CancelledError)
    assert [reply.content for reply in outcomes[1:]] == ["Paris is the capital."] * 9
    assert all(reply.response_meta.cached for reply in outcomes[1:])
    assert led[0].content == "Paris is the capital."
    assert len(openai_server.chat_requests()) == 1
