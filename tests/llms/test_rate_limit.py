"""llms.RateLimiter: per-minute limits shared by models, threads and event loops.

The schedule is tested on a simulated clock, where a minute takes no time: every 60-second
window is checked exactly. The wiring is tested against the loopback server, which records
when each request arrived, at 2400 requests a minute: fast enough that the tests take seconds,
slow enough that the limiter, not the server (about 80 requests a second on a busy 2-core
machine), sets the pace.
"""

from __future__ import annotations

import asyncio
import itertools
import pickle
import threading
import time
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit import callbacks, chains, llms, prompts
from chainkit.llms._retry import Backoff
from chainkit.llms.errors import ModelStatusError
from chainkit.llms.rate_limit import LocalBucket, RateLimiter, estimate_tokens
from chainkit.schema import Message
from tests.openai_server import TEST_API_KEY, Fault, OpenAIServer, Reply


class Clock:
    """A stand-in for time.monotonic that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def starts_of(bucket: LocalBucket, clock: Clock, asked_at: Sequence[float]) -> list[float]:
    """When requests asking at these times (in order) are let start."""
    starts = []
    for moment in asked_at:
        clock.now = moment
        wait, _, _ = bucket.reserve(0)
        starts.append(moment + max(wait, 0.0))
    return sorted(starts)


def most_in_any_window(starts: Sequence[float], seconds: float) -> int:
    """The largest number of `starts` inside one half-open window of `seconds` (less a
    microsecond, for the rounding of sums of floats)."""
    most, first = 0, 0
    for last, moment in enumerate(starts):
        while starts[first] <= moment - seconds + 1e-6:
            first += 1
        most = max(most, last - first + 1)
    return most


# The schedule, on a simulated clock.


@pytest.mark.parametrize("limit", [1, 2, 59, 60, 61, 119, 120, 600, 6000, 90.5])
def test_no_60_second_window_holds_more_than_the_limit(clock, limit):
    bucket = LocalBucket(limit, None, clock)
    # Everyone asks at once, then after an idle spell everyone asks again.
    count = int(limit * 3) + 5
    asked = [clock.now] * count + [clock.now + 1000] * count
    starts = starts_of(bucket, clock, asked)
    assert most_in_any_window(starts, 60) <= int(limit)
    # ...and the limit is used, not wasted: a long run gets close to it every minute.
    span = starts[count - 1] - starts[0]
    assert (count - 1) / span * 60 >= int(limit) * 59 / 60 - 1e-9


@given(
    limit=st.integers(1, 10_000),
    gaps=st.lists(st.floats(0, 5, allow_nan=False), min_size=1, max_size=400),
)
@settings(max_examples=200, deadline=None)
def test_any_arrival_pattern_keeps_every_minute_within_the_limit(limit, gaps):
    clock = Clock()
    bucket = LocalBucket(limit, None, clock)
    asked, moment = [], clock.now
    for gap in gaps:
        moment += gap
        asked.append(moment)
    starts = starts_of(bucket, clock, asked)
    assert most_in_any_window(starts, 60) <= limit


def test_the_burst_is_one_seconds_worth_and_the_rest_is_evenly_spaced(clock):
    bucket = LocalBucket(6000, None, clock)
    waits = [bucket.reserve(0)[0] for _ in range(103)]
    assert waits[:100] == pytest.approx([0.0] * 100, abs=1e-9)
    gaps = [b - a for a, b in itertools.pairwise(waits[100:])]
    assert gaps == pytest.approx([60 / (6000 - 100 + 1)] * 2)


def test_tokens_are_charged_the_estimate_then_what_the_server_counted(clock):
    bucket = LocalBucket(None, 6000, clock)  # 100 tokens a second, a burst of 100
    assert bucket.reserve(100)[0] == 0
    assert bucket.reserve(50)[0] == pytest.approx(0.0)  # within the one-second burst
    assert bucket.reserve(10)[0] == pytest.approx(0.5)
    bucket.settle(100, 400)  # the first request used 300 more than estimated
    assert bucket.reserve(10)[0] == pytest.approx(0.5 + 0.1 + 3.0)


def test_a_request_larger_than_the_burst_still_starts_and_pushes_the_next_back(clock):
    bucket = LocalBucket(None, 600, clock)  # 10 tokens a second
    assert bucket.reserve(5000)[0] == 0
    assert bucket.reserve(1)[0] == pytest.approx(499)


def test_a_pause_holds_new_requests_and_pushes_booked_ones_back(clock):
    bucket = LocalBucket(60, None, clock)  # one a second, no burst
    first = bucket.reserve(0)
    second_wait, start, shift = bucket.reserve(0)
    assert first[0] == 0 and second_wait == pytest.approx(1.0)
    clock.now += 0.25
    bucket.pause(2.0)
    # The caller booked for +1 s wakes then, and learns it must wait the pause out too.
    clock.now += 0.75
    assert bucket.wait_left(start, shift) == pytest.approx(2.0)
    # A new request waits for the pause and for its turn after the booked one.
    assert bucket.reserve(0)[0] == pytest.approx(3.0)
    # A shorter pause asked meanwhile changes nothing.
    bucket.pause(0.5)
    assert bucket.wait_left(start, shift) == pytest.approx(2.0)


def test_a_limiter_without_limits_starts_everything_at_once(clock):
    bucket = LocalBucket(None, None, clock)
    assert {bucket.reserve(10**6)[0] for _ in range(1000)} == {0.0}


def test_the_estimate_counts_characters_messages_and_max_tokens():
    request = {
        "messages": [{"role": "user", "content": "x" * 400}, {"role": "system", "content": None}],
        "max_tokens": 50,
    }
    assert estimate_tokens(request) == 100 + 2 * 4 + 50
    assert estimate_tokens({"input": ["abcd", "efgh"]}) == 2 + 2 * 4
    assert estimate_tokens({"input": "abcd"}) == 1 + 4
    # A max_tokens that is no count is the server's to refuse, not the estimate's.
    assert estimate_tokens({"input": "abcd", "max_tokens": "many"}) == 1 + 4


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (0, ValueError),
        (-5, ValueError),
        (float("inf"), ValueError),
        (float("nan"), ValueError),
        ("600", TypeError),
        (True, TypeError),
    ],
)
def test_a_limit_must_be_a_number_above_zero(value, error):
    with pytest.raises(error, match="requests_per_minute"):
        RateLimiter(requests_per_minute=value)
    with pytest.raises(error, match="tokens_per_minute"):
        RateLimiter(tokens_per_minute=value)


def test_models_refuse_what_is_no_rate_limiter():
    with pytest.raises(TypeError, match=r"rate_limiter must be an llms\.RateLimiter, got dict"):
        llms.OpenAI("m", base_url="http://127.0.0.1:1/v1", rate_limiter={"rpm": 5})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="rate_limiter must be"):
        llms.OpenAIEmbeddings(base_url="http://127.0.0.1:1/v1", rate_limiter=600)  # type: ignore[arg-type]


def test_a_limiter_cannot_be_copied_into_another_process():
    limiter = RateLimiter(600)
    assert repr(limiter) == "RateLimiter(requests_per_minute=600, tokens_per_minute=None)"
    with pytest.raises(TypeError, match="shared within one process"):
        pickle.dumps(limiter)


# Against the loopback server.


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def make_model(server: OpenAIServer, limiter: RateLimiter, **settings: object) -> llms.OpenAI:
    return llms.OpenAI(
        "loopback-model",
        base_url=server.base_url,
        api_key=TEST_API_KEY,
        timeout=10,
        rate_limiter=limiter,
        **settings,  # type: ignore[arg-type]
    )


def arrivals(server: OpenAIServer) -> list[float]:
    return sorted(request.at for request in server.requests)


LIMIT = 2400
"""Requests a minute in the tests against the server: 40 a second, a burst of 40."""
ARRIVAL_JITTER = 0.15
"""Seconds by which the server may see requests closer together than they were let start:
on a busy machine, a burst's 40 new connections take that long to be read."""


def check_windows(times: Sequence[float], per_minute: int) -> None:
    """No window holds more than one second's worth plus the limit's share of its length."""
    burst = per_minute // 60
    for seconds in (0.25, 0.5, 1.0, 2.0):
        allowed = burst + per_minute * (seconds + ARRIVAL_JITTER) / 60
        assert most_in_any_window(times, seconds) <= allowed, seconds


@pytest.mark.timeout(60)
def test_200_concurrent_runs_stay_within_the_limit_and_finish(server):
    limiter = RateLimiter(requests_per_minute=LIMIT)
    server.push(*[f"answer {i}" for i in range(200)])
    llm = make_model(server, limiter)
    chain = chains.LLMChain(prompts.PromptTemplate.from_template("question {n}"), llm)

    async def main() -> list[dict[str, object]]:
        try:
            inputs = [{"n": i} for i in range(200)]
            return await chains.abatch(chain, inputs, max_workers=200)
        finally:
            await llm.aclose()

    started = time.monotonic()
    results = asyncio.run(main())
    elapsed = time.monotonic() - started
    assert len(results) == 200 and {r["text"] for r in results} == {
        f"answer {i}" for i in range(200)
    }
    check_windows(arrivals(server), LIMIT)
    # 40 at once, then 160 more at under 40 a second: the limit did hold them back.
    assert elapsed >= 3.5


@pytest.mark.timeout(60)
def test_one_limiter_holds_threads_and_event_loops_together(server):
    limiter = RateLimiter(requests_per_minute=LIMIT)
    server.push(*["ok"] * 180)
    sync_llm, async_llm = make_model(server, limiter), make_model(server, limiter)
    ask = [Message.user("hi")]

    def in_threads() -> None:
        chains.batch(
            chains.LLMChain(prompts.PromptTemplate.from_template("{q}"), sync_llm),
            [{"q": i} for i in range(60)],
            max_workers=40,
        )

    def event_loop() -> None:
        async def main() -> None:
            try:
                await asyncio.gather(*(async_llm.agenerate(ask) for _ in range(60)))
            finally:
                await async_llm.aclose()

        asyncio.run(main())

    workers = [threading.Thread(target=t) for t in (in_threads, event_loop, event_loop)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(50)
    sync_llm.close()
    assert len(server.requests) == 180
    check_windows(arrivals(server), LIMIT)


@pytest.mark.timeout(30)
def test_the_usage_the_server_reports_holds_later_requests_back(server):
    # 1,000 tokens a second: a reply that used 3,000 tokens pushes the next request back ~2 s,
    # though its estimate was a few tokens.
    usage = {"prompt_tokens": 1000, "completion_tokens": 2000, "total_tokens": 3000}
    server.push(Reply("big", usage=usage), Reply("small"))
    llm = make_model(server, RateLimiter(tokens_per_minute=60_000))
    llm.generate([Message.user("hi")])
    llm.generate([Message.user("hi")])
    first, second = arrivals(server)
    assert second - first >= 1.5
    llm.close()


@pytest.mark.timeout(30)
def test_streamed_usage_is_counted_too(server):
    usage = {"prompt_tokens": 1000, "completion_tokens": 2000, "total_tokens": 3000}
    server.push(Reply("big", usage=usage), Reply("small"))
    llm = make_model(server, RateLimiter(tokens_per_minute=60_000))
    for _ in range(2):
        llm.generate([Message.user("hi")], streaming_func=lambda _: None)
    first, second = arrivals(server)
    assert second - first >= 1.5
    llm.close()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("status", [429, 503])
def test_a_retry_after_pauses_every_caller_of_the_limiter(server, status):
    limiter = RateLimiter(requests_per_minute=6000)
    patient = Backoff(initial=0.001, maximum=0.005, retry_after_cap=5)
    throttled = make_model(server, limiter, max_attempts=1, backoff=patient)
    other = make_model(server, limiter, backoff=patient)
    server.fail(Fault.http(status, "slow down", {"Retry-After": "1"}))
    server.push("later", "later too")
    with pytest.raises(ModelStatusError):
        throttled.generate([Message.user("hi")])
    refused_at = server.requests[0].at

    async def main() -> Message:
        try:
            return await other.agenerate([Message.user("hi")])
        finally:
            await other.aclose()

    # Another model, in an event loop, and this one again: both wait.
    assert asyncio.run(main()).content in ("later", "later too")
    assert throttled.generate([Message.user("hi")]).content in ("later", "later too")
    assert all(request.at - refused_at >= 0.9 for request in server.requests[1:])
    throttled.close()


@pytest.mark.timeout(30)
def test_the_pause_is_capped_as_the_backoff_caps_retry_after(server):
    limiter = RateLimiter()
    capped = Backoff(initial=0.001, maximum=0.005, retry_after_cap=0.2)
    llm = make_model(server, limiter, max_attempts=1, backoff=capped)
    server.fail(Fault.http(429, "slow down", {"Retry-After": "3600"}))
    server.push("soon")
    with pytest.raises(ModelStatusError):
        llm.generate([Message.user("hi")])
    assert llm.generate([Message.user("hi")]).content == "soon"
    assert server.requests[1].at - server.requests[0].at < 3
    llm.close()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("run_async", [False, True])
def test_embeddings_share_the_limiter_and_its_pauses(server, run_async):
    limiter = RateLimiter(requests_per_minute=6000, tokens_per_minute=10**6)
    patient = Backoff(initial=0.001, maximum=0.005, retry_after_cap=5)
    embeddings = llms.OpenAIEmbeddings(
        base_url=server.base_url, api_key=TEST_API_KEY, rate_limiter=limiter, backoff=patient
    )
    chat = make_model(server, limiter)
    server.fail(Fault.http(429, "slow down", {"Retry-After": "1"}))
    server.push("after the pause")

    paused = threading.Event()

    class Retries(callbacks.Handler):
        def handle_retry(self, attempt: int, error: BaseException, wait_seconds: float) -> None:
            paused.set()  # after the limiter heard the 429

    def embed() -> list[list[float]]:
        if not run_async:
            return embeddings.embed_documents(["a", "bb"], callbacks=Retries())

        async def main() -> list[list[float]]:
            try:
                return await embeddings.aembed_documents(["a", "bb"], callbacks=Retries())
            finally:
                await embeddings.aclose()

        return asyncio.run(main())

    embedder = threading.Thread(target=embed)
    embedder.start()
    assert paused.wait(10)
    assert chat.generate([Message.user("hi")]).content == "after the pause"
    embedder.join(10)
    refused_at = server.requests[0].at
    chat_request = next(r for r in server.requests if r.path.endswith("/chat/completions"))
    assert chat_request.at - refused_at >= 0.9
    assert len(server.requests) == 3  # the 429, the embeddings retried, the chat call
    chat.close()
    embeddings.close()


@pytest.mark.timeout(30)
def test_the_limiter_never_blocks_the_event_loop(server):
    # Two go at once, the others wait half a second each with asyncio.sleep, so a ticker on
    # the same loop keeps ticking meanwhile.
    limiter = RateLimiter(requests_per_minute=120)  # burst 2, then one every ~0.5 s
    server.push(*["ok"] * 4)
    llm = make_model(server, limiter)
    ticks: list[float] = []

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            await asyncio.sleep(0.02)

    async def main() -> None:
        stop = asyncio.Event()
        ticking = asyncio.ensure_future(ticker(stop))
        try:
            await asyncio.gather(*(llm.agenerate([Message.user("hi")]) for _ in range(4)))
        finally:
            stop.set()
            await ticking
            await llm.aclose()

    asyncio.run(main())
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert len(ticks) > 20 and max(gaps) < 0.3
