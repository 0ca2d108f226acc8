"""llms.RateLimiter: per-minute limits shared by models, threads and event loops.

Every schedule is tested on a simulated clock (integer nanoseconds), where a minute takes no
time and waiting is exact, so every 60-second window is checked exactly and nothing depends
on how busy the machine is: the bucket directly, the limiter with its sleep in the clock's
hands, and async callers on an event loop whose time is the clock's. The wiring to the models
is tested against the loopback server with the same clock. One smoke test runs in real time,
with a generous bound.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import heapq
import itertools
import math
import pickle
import selectors
import struct
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from fractions import Fraction
from typing import Any, TypeVar

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from chainkit import chains, llms, prompts
from chainkit._tokens import (
    AUDIO_OR_FILE_TOKENS,
    IMAGE_MOST_TOKENS,
    estimate_tokens,
    high_detail_tokens,
    image_size,
    reported_count,
)
from chainkit.llms.errors import ModelConfigError, ModelStatusError
from chainkit.llms.rate_limit import LocalBucket, RateLimiter
from chainkit.llms.retry import Backoff
from chainkit.schema import Message
from tests.support.openai_server import TEST_API_KEY, Fault, OpenAIServer, Reply

T = TypeVar("T")
SECOND = 10**9
MINUTE = 60 * SECOND


class Clock:
    """A stand-in for time.monotonic_ns that moves only when told, or when slept on."""

    def __init__(self) -> None:
        self.now = 1000 * SECOND
        self.slept: list[float] = []

    def __call__(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += round(seconds * SECOND)

    async def asleep(self, seconds: float) -> None:
        """For one async caller at a time; concurrent ones run on `virtual_time`."""
        self.sleep(seconds)
        await asyncio.sleep(0)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def simulated(clock: Clock, rpm: float | None = None, tpm: float | None = None) -> RateLimiter:
    """A limiter whose schedule and sleep run on `clock`."""
    limiter = RateLimiter(rpm, tpm)
    limiter._bucket = LocalBucket(limiter.requests_per_minute, limiter.tokens_per_minute, clock)
    limiter._sleep, limiter._asleep = clock.sleep, clock.asleep
    return limiter


class _VirtualSelector(selectors.DefaultSelector):
    """Never blocks: a wait for a timer moves the clock to it instead."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self._virtual = clock

    def select(self, timeout: float | None = None) -> list[Any]:
        if timeout is not None and timeout > 0:
            self._virtual.now += round(timeout * SECOND)
        return super().select(0)


class _VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self, clock: Clock) -> None:
        super().__init__(_VirtualSelector(clock))
        self._virtual = clock

    def time(self) -> float:
        return self._virtual.now / SECOND


def virtual_time(clock: Clock, main: Coroutine[Any, Any, T]) -> T:
    """Runs `main` on an event loop whose time is `clock`'s: any number of tasks sleep
    exactly as long as they ask, and no time passes otherwise."""
    with asyncio.Runner(loop_factory=lambda: _VirtualLoop(clock)) as runner:
        return runner.run(main)


def most_in_any_window(starts: Sequence[int], window: int) -> int:
    """The largest number of `starts` (ns) inside one window of `window` ns, ends included."""
    ordered = sorted(starts)
    return max(
        (i + 1 - bisect.bisect_left(ordered, start - window) for i, start in enumerate(ordered)),
        default=0,
    )


def most_tokens_in_any_window(starts: Sequence[tuple[int, int]]) -> int:
    """The most tokens charged to the starts of one 60-second window, ends included."""
    ordered = sorted(starts)
    return max(
        (
            sum(tokens for at, tokens in ordered if start - MINUTE <= at <= start)
            for start, _ in ordered
        ),
        default=0,
    )


def check_request_limit(starts: Sequence[int], rpm: float) -> None:
    if rpm >= 1:
        assert most_in_any_window(starts, MINUTE) <= math.floor(rpm)
    else:  # more than 60 / rpm seconds between any two
        ordered = sorted(starts)
        assert all((b - a) * Fraction(rpm) > MINUTE for a, b in itertools.pairwise(ordered))


# The schedule: a simulation of callers arriving, waiting, giving up, being paused.


class Simulation:
    """Callers of one bucket on a simulated clock: each arrives, books, sleeps exactly as
    long as told and asks again until it may start; a second after it starts, it reports
    what it used. Records who started when, and what each was charged in the end."""

    def __init__(self, bucket: LocalBucket, clock: Clock) -> None:
        self.bucket, self.clock = bucket, clock
        self.events: list[tuple[int, int, Callable[[], None]]] = []
        self.order = itertools.count()
        self.waiting: set[int] = set()
        self.charged: dict[int, int] = {}
        self.started: list[tuple[int, int]] = []  # (when, ticket)

    def at(self, moment: int, action: Callable[[], None]) -> None:
        heapq.heappush(self.events, (moment, next(self.order), action))

    def caller(self, tokens: int, used: int | None = None) -> Callable[[], None]:
        def arrive() -> None:
            wait, ticket = self.bucket.reserve(tokens)
            self.charged[ticket] = tokens if used is None else used
            self.waiting.add(ticket)
            self._wake_after(ticket, wait, used)

        return arrive

    def _wake_after(self, ticket: int, wait: float, used: int | None) -> None:
        if wait > 0:
            self.at(self.clock.now + round(wait * SECOND), lambda: self._wake(ticket, used))
            return
        self.waiting.remove(ticket)
        self.started.append((self.clock.now, ticket))
        if used is not None:
            self.at(self.clock.now + SECOND, lambda: self.bucket.settle(ticket, used))

    def _wake(self, ticket: int, used: int | None) -> None:
        if ticket in self.waiting:  # not given up meanwhile
            self._wake_after(ticket, self.bucket.wait_left(ticket), used)

    def give_up(self, which: int) -> None:
        """The `which`-th waiting caller (modulo their number) stops waiting."""
        if self.waiting:
            ticket = sorted(self.waiting)[which % len(self.waiting)]
            self.waiting.remove(ticket)
            self.bucket.cancel(ticket)

    def run(self) -> None:
        while self.events:
            moment, _, action = heapq.heappop(self.events)
            self.clock.now = max(self.clock.now, moment)
            action()

    def starts(self) -> list[int]:
        return [at for at, _ in self.started]

    def charges(self) -> list[tuple[int, int]]:
        return [(at, self.charged[ticket]) for at, ticket in self.started]


def simulate(
    bucket: LocalBucket, clock: Clock, script: Sequence[tuple[float, str, Any]]
) -> Simulation:
    """Runs `script`: (seconds after the previous step, what happens, its argument), where
    what happens is "arrive" (argument: tokens), "give up" (argument: which waiter) or
    "pause" (argument: seconds)."""
    simulation = Simulation(bucket, clock)
    moment = clock.now
    for gap, what, argument in script:
        moment += round(gap * SECOND)
        if what == "arrive":
            action = simulation.caller(argument)
        elif what == "give up":
            action = _bound(simulation.give_up, argument)
        else:
            action = _bound(bucket.pause, argument)
        simulation.at(moment, action)
    simulation.run()
    return simulation


def _bound(function: Callable[[Any], None], argument: Any) -> Callable[[], None]:
    return lambda: function(argument)


REQUEST_LIMITS = [1, 2, 59, 60, 61, 90, 119, 120, 500, 600, 6000, 90.5, 0.5, 0.3, 0.07]


@pytest.mark.parametrize("limit", REQUEST_LIMITS)
def test_no_60_second_window_holds_more_than_the_limit(clock, limit):
    bucket = LocalBucket(limit, None, clock)
    # Everyone asks at once, then after an idle spell everyone asks again.
    count = max(int(limit * 3), 3) + 5
    script = [(0.0, "arrive", 0)] * count + [(3600.0 / min(limit, 1), "arrive", 0)]
    script += [(0.0, "arrive", 0)] * (count - 1)
    moments = simulate(bucket, clock, script).starts()
    assert len(moments) == 2 * count
    check_request_limit(moments, limit)
    # ...and the limit is used, not wasted: the first run gets close to it.
    first_run = sorted(moments)[:count]
    span = Fraction(first_run[-1] - first_run[0], MINUTE)
    assert (count - 1) / span >= (max(math.floor(limit), 1) - 1) * 59 / 60 if limit >= 1 else True
    if limit < 1:  # one every 60 / limit seconds, to the nanosecond
        gaps = {b - a for a, b in itertools.pairwise(first_run)}
        assert gaps == {math.floor(Fraction(MINUTE) / Fraction(limit)) + 1}


request_limits = st.one_of(
    st.integers(1, 10_000),
    st.floats(0.01, 1, exclude_max=True),
    st.floats(1, 2_000),
)
steps = st.lists(
    st.one_of(
        st.tuples(
            st.sampled_from([0.0, 0.0, 0.001, 0.3, 1.0, 7.0, 59.0, 61.0, 300.0]),
            st.just("arrive"),
            st.just(0),
        ),
        st.tuples(st.floats(0, 90), st.just("give up"), st.integers(0, 1000)),
        st.tuples(st.floats(0, 90), st.just("pause"), st.floats(0, 120)),
    ),
    min_size=1,
    max_size=300,
)


@given(limit=request_limits, script=steps)
@example(  # a pause must not move a waiter earlier than it sleeps: it would start late
    limit=1,
    script=[(0.0, "arrive", 0)] * 3
    + [(0.0, "give up", 0), (0.0, "pause", 1.0), (0.0, "arrive", 0)],
)
@settings(max_examples=300, deadline=None)
def test_any_arrival_pattern_keeps_every_window_within_the_limit(limit, script):
    clock = Clock()
    simulation = simulate(LocalBucket(limit, None, clock), clock, script)
    check_request_limit(simulation.starts(), limit)
    assert not simulation.waiting  # everyone who did not give up started


token_steps = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.0, 0.5, 5.0, 30.0, 61.0]),
        st.integers(1, 6000),
        st.one_of(st.none(), st.integers(0, 6000)),
    ),
    min_size=1,
    max_size=120,
)


@given(limit=st.one_of(st.integers(6000, 50_000), st.floats(6000, 50_000)), script=token_steps)
@settings(max_examples=200, deadline=None)
def test_any_token_pattern_keeps_every_minute_within_the_limit(limit, script):
    """Corrections that lower a charge free room; the guarantee holds for what is charged."""
    clock = Clock()
    simulation = Simulation(LocalBucket(None, limit, clock), clock)
    moment = clock.now
    for gap, tokens, used in script:
        moment += round(gap * SECOND)
        lower = None if used is None else min(used, tokens)
        simulation.at(moment, simulation.caller(tokens, lower))
    simulation.run()
    assert len(simulation.started) == len(script)
    assert most_tokens_in_any_window(simulation.charges()) <= limit


@given(
    limit=st.integers(1000, 20_000),
    requests=st.lists(st.tuples(st.integers(1, 1000), st.integers(0, 1000)), max_size=60),
)
@settings(max_examples=100, deadline=None)
def test_one_caller_at_a_time_stays_within_the_limit_whatever_the_server_reports(limit, requests):
    """A correction, upwards too, counts for every request booked after it: each starts
    where the usage reported so far and its own estimate fit the minute."""
    clock = Clock()
    bucket = LocalBucket(None, limit, clock)
    used_before: list[tuple[int, int]] = []
    for estimate, used in requests:
        wait, ticket = bucket.reserve(estimate)
        clock.sleep(max(wait, 0))
        assert bucket.wait_left(ticket) <= 0
        in_window = sum(n for at, n in used_before if at >= clock.now - MINUTE)
        assert in_window + estimate <= limit
        used_before.append((clock.now, used))
        bucket.settle(ticket, used)


def test_large_and_small_requests_never_exceed_the_token_limit_in_a_minute(clock):
    # 1k and 5k requests under 6,000 a minute: once, 7,000 and 10,000 started within 60 s.
    for sizes in ([1000, 5000] * 6, [5000, 1000] * 6, [5000, 5000, 1000, 1000, 1000]):
        bucket = LocalBucket(None, 6000, clock)
        simulation = simulate(bucket, clock, [(0.0, "arrive", size) for size in sizes])
        booked = simulation.charges()
        assert sorted(tokens for _, tokens in booked) == sorted(sizes)
        assert most_tokens_in_any_window(booked) <= 6000
        clock.now += 3600 * SECOND


def test_the_burst_is_one_seconds_worth_and_the_rest_is_evenly_spaced(clock):
    bucket = LocalBucket(6000, None, clock)
    waits = [round(bucket.reserve(0)[0] * SECOND) for _ in range(103)]
    assert waits[:100] == [0] * 100
    interval = MINUTE // (6000 - 100 + 1) + 1
    assert waits[100:] == [interval, 2 * interval, 3 * interval]
    # After an idle spell, a second's worth again; a little idle time is worth a little.
    clock.sleep(60)
    assert [bucket.reserve(0)[0] for _ in range(100)] == [0.0] * 100
    assert bucket.reserve(0)[0] > 0
    clock.now += 3 * interval  # two intervals past the 101st start
    assert [bucket.reserve(0)[0] <= 0 for _ in range(3)] == [True, True, False]


def test_one_a_minute_is_one_a_minute_and_a_nanosecond(clock):
    bucket = LocalBucket(1, None, clock)
    first, second, third = (bucket.reserve(0) for _ in range(3))
    assert [ns(first[0]), ns(second[0]), ns(third[0])] == [0, MINUTE + 1, 2 * MINUTE + 2]
    bucket.cancel(second[1])
    bucket.cancel(third[1])
    # A minute after the start, to the nanosecond, the minute still holds it.
    clock.now += MINUTE
    wait, ticket = bucket.reserve(0)
    assert ns(wait) == 1
    bucket.cancel(ticket)  # a nanosecond early is not started yet: it goes back
    assert ns(bucket.reserve(0)[0]) == 1


def test_a_newcomer_never_starts_before_those_booked_earlier(clock):
    bucket = LocalBucket(60, None, clock)
    interval = SECOND + 1
    tickets = [bucket.reserve(0)[1] for _ in range(4)]  # 0, 1, 2 and 3 intervals on
    bucket.cancel(tickets[1])
    bucket.cancel(tickets[2])  # the pace steps back two places, behind the last booked
    assert ns(bucket.reserve(0)[0]) == 3 * interval


def ns(seconds: float) -> int:
    """A wait a bucket gave, back in its nanoseconds."""
    return round(seconds * SECOND)


def test_tokens_are_charged_the_estimate_then_what_the_server_counted(clock):
    bucket = LocalBucket(None, 6000, clock)  # 100 tokens a second, a burst of 100
    assert bucket.reserve(100)[0] == 0
    wait, ticket = bucket.reserve(50)
    assert wait == 0  # within the one-second burst
    assert ns(bucket.reserve(10)[0]) == SECOND // 2
    bucket.settle(ticket, 350)  # used 300 more than estimated
    assert ns(bucket.reserve(10)[0]) == SECOND * 36 // 10
    bucket.settle(12345, 10**6)  # no such booking (any more): nothing changes
    assert ns(bucket.reserve(1)[0]) == SECOND * 37 // 10


def test_a_minute_may_hold_exactly_the_token_limit(clock):
    bucket = LocalBucket(None, 6000, clock)  # 100-token requests: one a second, one of burst
    waits = [ns(bucket.reserve(100)[0]) for _ in range(63)]
    # 60 start within [0 s, 58 s]: 6,000 tokens. The 61st waits for the first to be a minute
    # old, to the nanosecond, and the 62nd for the second.
    assert waits[:61] == [0, 0, *(n * SECOND for n in range(1, 59)), MINUTE + 1]
    assert waits[61:] == [MINUTE + 1, MINUTE + SECOND + 1]


def test_a_fractional_token_limit_paces_exactly(clock):
    bucket = LocalBucket(None, 6000.5, clock)  # 12,001 tokens in two minutes
    assert bucket.reserve(200)[0] == 0
    # 200 tokens take 200 * 120 / 12,001 s, rounded up to the nanosecond; less 1 s of burst.
    assert ns(bucket.reserve(100)[0]) == 1_999_833_348 - SECOND


def test_a_lower_count_frees_room_in_the_minute(clock):
    bucket = LocalBucket(None, 6000, clock)
    _, big = bucket.reserve(6000)
    assert bucket.reserve(1000)[0] == pytest.approx(60.000000001)
    clock.sleep(1)  # the 1000 is still waiting when the big one reports what it used
    bucket.settle(big, 100)
    assert bucket.reserve(10)[0] <= 60
    assert bucket.wait_left(999) == 0  # an unknown ticket is not waited for


def test_a_request_larger_than_the_burst_still_starts_and_pushes_the_next_back(clock):
    bucket = LocalBucket(None, 600, clock)  # 10 tokens a second
    assert bucket.reserve(500)[0] == 0
    assert bucket.reserve(1)[0] == pytest.approx(49)


def test_a_pause_holds_new_requests_and_books_waiting_ones_again_after_it(clock):
    bucket = LocalBucket(60, None, clock)  # one a second, no burst
    assert bucket.reserve(0)[0] == 0
    second_wait, second = bucket.reserve(0)
    _, third = bucket.reserve(0)
    assert second_wait == pytest.approx(1.0)
    clock.sleep(0.25)
    bucket.pause(2.0)
    # The caller booked for +1 s wakes then, and learns it must wait the pause out too.
    clock.sleep(0.75)
    assert bucket.wait_left(second) == pytest.approx(1.25)
    assert bucket.wait_left(third) == pytest.approx(2.25 + 1e-9)
    # A new request waits for the pause and for its turn after the booked ones.
    assert bucket.reserve(0)[0] == pytest.approx(3.25 + 2e-9)
    # A shorter pause asked meanwhile changes nothing.
    bucket.pause(0.5)
    assert bucket.wait_left(second) == pytest.approx(1.25)
    # Nor does one ending when the first does.
    bucket.pause(1.25)
    assert bucket.wait_left(second) == pytest.approx(1.25)


def test_a_pause_holds_a_limiter_without_limits_too(clock):
    bucket = LocalBucket(None, None, clock)
    assert {bucket.reserve(10**6)[0] for _ in range(1000)} == {0.0}
    bucket.pause(5)
    assert bucket.reserve(0)[0] == 5.0


def test_a_caller_that_gives_up_hands_its_place_back(clock):
    bucket = LocalBucket(60, None, clock)
    bucket.reserve(0)
    tickets = [bucket.reserve(0)[1] for _ in range(49)]
    for ticket in tickets[::-1][:10] + tickets[:39]:  # in any order
        bucket.cancel(ticket)
    assert ns(bucket.reserve(0)[0]) == SECOND + 1
    # One in the middle gives its place to the next newcomer, within the limit still.
    _, middle, last = (bucket.reserve(0)[1] for _ in range(3))
    bucket.cancel(middle)
    bucket.cancel(12345)  # unknown: nothing happens
    assert round(bucket.reserve(0)[0] * SECOND) <= round(bucket.wait_left(last) * SECOND)


def test_a_booking_given_back_frees_its_tokens_and_its_pace(clock):
    bucket = LocalBucket(None, 6000, clock)
    assert bucket.reserve(2000)[0] == 0
    wait, ticket = bucket.reserve(3000)
    assert ns(wait) == 19 * SECOND  # 20 s of pace, less 1 s of burst
    bucket.cancel(ticket)
    # Its place, and its room in the minute: 2,000 + 4,000 fit, not a minute later.
    assert ns(bucket.reserve(4000)[0]) == 19 * SECOND


def test_a_start_a_minute_ago_to_the_nanosecond_still_counts(clock):
    bucket = LocalBucket(None, 6000, clock)
    assert bucket.reserve(6000)[0] == 0
    clock.now += MINUTE
    assert ns(bucket.reserve(100)[0]) == 1


def test_a_started_request_is_not_given_back(clock):
    bucket = LocalBucket(60, 600, clock)
    wait, ticket = bucket.reserve(100)
    assert wait == 0
    bucket.cancel(ticket)  # too late: it went
    assert ns(bucket.reserve(100)[0]) == 9 * SECOND  # 10 s of pace, less 1 s of burst


def test_a_bucket_without_a_token_limit_takes_corrections_all_the_same(clock):
    bucket = LocalBucket(60, None, clock)
    _, ticket = bucket.reserve(0)
    bucket.settle(ticket, 10**6)
    assert ns(bucket.reserve(0)[0]) == SECOND + 1


def test_the_log_forgets_what_no_window_can_hold(clock):
    bucket = LocalBucket(6000, 10**6, clock)
    for _ in range(10_000):
        wait, ticket = bucket.reserve(10)
        clock.sleep(max(wait, 0) + 0.05)
        assert bucket.wait_left(ticket) <= 0
        bucket.settle(ticket, 20)
    assert len(bucket._log) == len(bucket._tickets) <= 1201
    assert bucket._logged_tokens == 20 * len(bucket._log) - 10 * (bucket._log[-1].tokens == 10)


def test_threads_booking_at_once_keep_the_limit(clock):
    bucket = LocalBucket(600, None, clock)  # the clock stands still: all book at once
    booked: list[float] = []

    def book() -> None:
        booked.extend(bucket.reserve(0)[0] for _ in range(250))

    workers = [threading.Thread(target=book) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    moments = [clock.now + round(wait * SECOND) for wait in booked]
    assert len(moments) == 2000 and most_in_any_window(moments, MINUTE) == 600


# The limiter: estimates, refusals, waiting, giving up, pauses.


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (0, ModelConfigError, "must be a finite number above zero, or None, got 0"),
        (-5, ModelConfigError, "must be a finite number above zero, or None, got -5"),
        (float("inf"), ModelConfigError, "must be a finite number above zero, or None, got inf"),
        (float("nan"), ModelConfigError, "must be a finite number above zero, or None, got nan"),
        ("600", TypeError, "must be a number per minute or None, got str"),
        (True, TypeError, "must be a number per minute or None, got bool"),
    ],
)
def test_a_limit_must_be_a_number_above_zero(value, error, message):
    with pytest.raises(error, match=f"^requests_per_minute {message}$"):
        RateLimiter(requests_per_minute=value)
    with pytest.raises(error, match=f"^tokens_per_minute {message}$"):
        RateLimiter(tokens_per_minute=value)


def test_limits_are_kept_as_given():
    limiter = RateLimiter(0.5, 90_000)
    assert (limiter.requests_per_minute, limiter.tokens_per_minute) == (0.5, 90_000.0)
    assert repr(limiter) == "RateLimiter(requests_per_minute=0.5, tokens_per_minute=90000)"
    assert repr(RateLimiter()) == "RateLimiter(requests_per_minute=None, tokens_per_minute=None)"


def test_models_refuse_what_is_no_rate_limiter():
    with pytest.raises(TypeError, match=r"rate_limiter must be an llms\.RateLimiter, got dict"):
        llms.OpenAI("m", base_url="http://127.0.0.1:1/v1", rate_limiter={"rpm": 5})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="rate_limiter must be"):
        llms.OpenAIEmbeddings(base_url="http://127.0.0.1:1/v1", rate_limiter=600)  # type: ignore[arg-type]


def test_a_limiter_cannot_be_copied_into_another_process():
    limiter = RateLimiter(600)
    assert repr(limiter) == "RateLimiter(requests_per_minute=600, tokens_per_minute=None)"
    with pytest.raises(TypeError) as refused:
        pickle.dumps(limiter)
    assert str(refused.value) == (
        "an llms.RateLimiter is shared within one process only and cannot be pickled; to "
        "share limits between Ray workers use chainkit.distributed.RayRateLimiter"
    )


def ask(text: str = "hi", max_tokens: int | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    if max_tokens is not None:
        request["max_tokens"] = max_tokens
    return request


def no_count(_: object) -> int | None:
    return None


def test_a_request_larger_than_the_token_limit_is_refused_at_once(clock):
    limiter = simulated(clock, tpm=6000)
    sent: list[int] = []
    with pytest.raises(ModelConfigError) as refused:
        limiter.call(30, ask(max_tokens=6000), lambda: sent.append(1), no_count)
    assert str(refused.value) == (
        "this request is estimated at 6,005 tokens, more than the rate limiter's "
        "tokens_per_minute=6000 lets start in a minute, so it could never be sent: raise "
        "tokens_per_minute, or send less (a lower max_tokens, shorter messages)"
    )
    assert sent == [] and clock.slept == []
    # One that fits exactly is sent, and nothing waited for the refused one.
    assert limiter.call(30, ask(max_tokens=5995), lambda: "sent", no_count) == "sent"
    assert clock.slept == []


def test_sync_callers_sleep_until_their_start_and_charge_what_was_used(clock):
    limiter = simulated(clock, rpm=60, tpm=600)  # 1 a second, 10 tokens a second
    arrived: list[int] = []

    def send() -> str:
        arrived.append(clock.now)
        return "sent"

    start = clock.now
    assert limiter.call(30, ask(), send, lambda _: 100) == "sent"
    assert limiter.call(30, ask(), send, lambda _: True) == "sent"  # not a count: the estimate
    assert limiter.call(30, ask(), send, lambda _: -5) == "sent"  # nor this
    limiter.call(30, ask(), send, lambda _: 0)  # a count: charged nothing
    limiter.call(30, ask(), send, no_count)
    # 100 tokens used, at 10 a second, with a second of burst; then 5 a request, 1 s apart.
    assert [at - start for at in arrived] == [
        0,
        9 * SECOND,
        10 * SECOND + 1,
        11 * SECOND + 2,
        12 * SECOND + 3,
    ]


def test_a_request_that_used_no_tokens_is_charged_none(clock):
    limiter = simulated(clock, tpm=60)  # a token a second
    limiter.call(30, ask(), lambda: None, lambda _: 0)  # estimated at 5
    limiter.call(30, ask(), lambda: None, no_count)
    assert clock.slept == []


def test_a_limiter_keeps_the_monotonic_clock_and_sleeps_by_default():
    # The schedule is the one of time.monotonic_ns, and waiting is time.sleep: 100 at once,
    # then one 10 ms later. (How long it took is left alone: a busy machine decides that.)
    limiter = RateLimiter(requests_per_minute=6000)
    sent = [limiter.call(30, ask(), lambda: "sent", no_count) for _ in range(101)]
    assert sent == ["sent"] * 101
    once_a_minute = RateLimiter(requests_per_minute=1)
    assert once_a_minute._bucket.reserve(0)[0] == 0
    assert 30 < once_a_minute._bucket.reserve(0)[0] <= 60.000000001


def test_without_a_token_limit_no_usage_is_asked_for(clock):
    limiter = simulated(clock, rpm=60)

    def must_not_be_asked(_: object) -> int:
        raise AssertionError("usage asked for")

    assert limiter.call(30, ask("x" * 10**6), lambda: "sent", must_not_be_asked) == "sent"


def test_async_callers_wait_on_the_event_loop_and_charge_what_was_used(clock):
    limiter = simulated(clock, tpm=600)
    arrived: list[int] = []

    async def send() -> str:
        arrived.append(clock.now)
        return "sent"

    async def main() -> None:
        await limiter.acall(30, ask(), send, lambda _: 100)
        await limiter.acall(30, ask(), send, lambda _: 20)

    start = clock.now
    asyncio.run(main())
    assert [at - start for at in arrived] == [0, 9 * SECOND]
    arrived.clear()
    asyncio.run(main())  # the 20 used are charged too: 2 s of pace
    assert arrived[0] - start == 11 * SECOND


@pytest.mark.parametrize("limit", [1, 7, 60, 61, 119, 120, 500, 0.5])
def test_concurrent_async_callers_keep_every_window(limit):
    clock = Clock()
    limiter = simulated(clock, rpm=limit)
    limiter._asleep = None  # asyncio.sleep, on the loop's simulated time
    arrived: list[int] = []

    async def send() -> None:
        arrived.append(clock.now)

    async def main() -> None:
        count = max(int(limit) * 2, 3) + 1
        await asyncio.gather(*(limiter.acall(30, ask(), send, no_count) for _ in range(count)))

    virtual_time(clock, main())
    check_request_limit(arrived, limit)
    if limit >= 60:  # a burst of one second's worth, then evenly spaced
        burst = int(limit) // 60
        assert arrived[:burst] == [arrived[0]] * burst
        assert len({b - a for a, b in itertools.pairwise(arrived[burst - 1 :])}) == 1


def test_cancelled_async_waiters_give_their_places_back(clock: Clock) -> None:
    # 50 at once at 60 a minute: one goes, 49 wait, and are cancelled (as abatch does).
    limiter = simulated(clock, rpm=60)
    limiter._asleep = None

    async def send() -> str:
        return "sent"

    async def main() -> float:
        waiting = [
            asyncio.ensure_future(limiter.acall(30, ask(), send, no_count)) for _ in range(50)
        ]
        await asyncio.sleep(0.5)
        for task in waiting:
            task.cancel()
        results = await asyncio.gather(*waiting, return_exceptions=True)
        assert results.count("sent") == 1
        before = clock.now
        await limiter.acall(30, ask(), send, no_count)
        return (clock.now - before) / SECOND

    # Once, the next request waited 49 s for the places of the cancelled.
    assert virtual_time(clock, main()) == pytest.approx(0.5 + 1e-9)


def test_a_waiter_woken_at_its_old_start_waits_out_a_pause_asked_meanwhile(clock):
    limiter = simulated(clock, rpm=60)
    limiter.call(30, ask(), lambda: None, no_count)
    asked_at = clock.now

    def sleep_through_a_429(seconds: float) -> None:
        whole = round(seconds * SECOND)
        clock.now += whole // 2
        if not clock.slept:  # another model's call is answered 429, Retry-After: 5
            limiter._bucket.pause(5)
        clock.slept.append(seconds)
        clock.now += whole - whole // 2

    limiter._sleep = sleep_through_a_429
    limiter.call(30, ask(), lambda: None, no_count)
    assert clock.now - asked_at == 5 * SECOND + SECOND // 2


def test_an_async_waiter_woken_at_its_old_start_waits_out_a_pause_too(clock: Clock) -> None:
    limiter = simulated(clock, rpm=60)
    limiter._asleep = None

    async def send() -> int:
        return clock.now

    async def main() -> int:
        await limiter.acall(30, ask(), send, no_count)
        waiter = asyncio.ensure_future(limiter.acall(30, ask(), send, no_count))
        await asyncio.sleep(0.5)
        limiter._bucket.pause(5)
        return await waiter

    asked_at = clock.now
    assert virtual_time(clock, main()) - asked_at == 5 * SECOND + SECOND // 2


def test_an_interrupted_sync_waiter_gives_its_place_back(clock):
    limiter = simulated(clock, rpm=60)
    went = clock.now
    limiter.call(30, ask(), lambda: None, no_count)

    def interrupted(seconds: float) -> None:
        clock.sleep(seconds / 2)
        raise KeyboardInterrupt

    limiter._sleep = interrupted
    for _ in range(5):
        with pytest.raises(KeyboardInterrupt):
            limiter.call(30, ask(), lambda: None, no_count)
    limiter._sleep = clock.sleep
    limiter.call(30, ask(), lambda: None, no_count)
    assert clock.now - went == SECOND + 1  # once, after the five given-up places: 6 s


def status(code: int, retry_after: float | None) -> ModelStatusError:
    return ModelStatusError(code, "slow down", retry_after=retry_after)


def refused(error: ModelStatusError) -> Callable[[], None]:
    def attempt() -> None:
        raise error

    return attempt


@pytest.mark.parametrize(
    ("error", "pause"),
    [
        (status(429, 3), 3.0),
        (status(503, 3), 3.0),
        (status(429, 3600), 5.0),  # capped
        (status(429, None), 0.0),  # no Retry-After: the retry policy's own backoff
        (status(500, 3), 0.0),  # not an answer that asks to slow down
        (status(400, 3), 0.0),
    ],
)
@pytest.mark.parametrize("run_async", [False, True])
def test_a_retry_after_pauses_every_caller_of_the_limiter(clock, error, pause, run_async):
    limiter = simulated(clock, rpm=6000)
    if run_async:

        async def attempt() -> None:
            raise error

        with pytest.raises(ModelStatusError):
            asyncio.run(limiter.acall(5, ask(), attempt, no_count))
    else:
        with pytest.raises(ModelStatusError):
            limiter.call(5, ask(), refused(error), no_count)
    before = clock.now
    limiter.call(5, ask(), lambda: None, no_count)  # another model, say, sharing the limiter
    assert clock.now - before == round(pause * SECOND)


# Estimates.


def test_the_estimate_counts_characters_messages_tools_and_max_tokens():
    request = {
        "messages": [
            {"role": "user", "content": "x" * 400},
            {"role": "system", "content": None},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"arguments": "a" * 40}}],
            },
        ],
        "max_tokens": 50,
    }
    assert estimate_tokens(request) == 110 + 3 * 4 + 50
    assert estimate_tokens({"input": ["abcd", "efgh"]}) == 2 + 2 * 4
    assert estimate_tokens({"input": "abcd"}) == 1 + 4
    assert estimate_tokens({"input": "abcde"}) == 2 + 4  # rounded up
    assert estimate_tokens({"max_completion_tokens": 30}) == 30
    assert estimate_tokens({"tools": [{"name": "abcdefgh"}]}) == len(str({"name": "abcdefgh"})) // 4
    # A max_tokens that is no count is the server's to refuse, not the estimate's.
    assert estimate_tokens({"input": "abcd", "max_tokens": "many"}) == 1 + 4
    assert estimate_tokens({"input": "abcd", "max_tokens": True}) == 1 + 4


def png(width: int, height: int, padding: int = 0) -> bytes:
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", width, height)
    return header + b"\x08\x06\x00\x00\x00" + bytes(padding)


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + bytes(9)
    exif = b"\xff\xe1" + struct.pack(">H", 2002) + bytes(2000)
    frame = b"\xff\xc2" + struct.pack(">HBHH", 17, 8, height, width) + bytes(12)
    return b"\xff\xd8" + app0 + b"\xff\xff" + exif + b"\xff\xd0" + frame


def webp(chunk: bytes, body: bytes) -> bytes:
    return b"RIFF" + bytes(4) + b"WEBP" + chunk + bytes(4) + body


def data_url(data: bytes, media: str = "image/png") -> str:
    return f"data:{media};base64,{base64.b64encode(data).decode()}"


@pytest.mark.parametrize(
    ("image", "size"),
    [
        (png(1024, 768), (1024, 768)),
        (jpeg(4000, 3000), (4000, 3000)),
        (b"GIF89a" + struct.pack("<HH", 320, 200) + bytes(8), (320, 200)),
        (webp(b"VP8 ", b"\0\0\0\x9d\x01\x2a" + struct.pack("<HH", 640 | 0x4000, 480)), (640, 480)),
        (webp(b"VP8L", b"\x2f" + struct.pack("<I", (799) | (599 << 14))), (800, 600)),
        (
            webp(b"VP8X", bytes(4) + (1919).to_bytes(3, "little") + (1079).to_bytes(3, "little")),
            (1920, 1080),
        ),
    ],
)
def test_an_images_size_is_read_from_its_header(image, size):
    assert image_size(data_url(image)) == size


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/cat.png",
        "data:image/png;base64,!!!!not base64",
        "data:image/png,rawbytes",
        data_url(b"not an image at all"),
        data_url(png(0, 10)),
        data_url(b"\xff\xd8\xff\xe0\x00\x10" + bytes(30)),  # a JPEG cut before its frame
        data_url(b"\xff\xd8" + bytes(40)),  # no marker where one should be
        data_url(webp(b"VP8?", bytes(30))),
        data_url(b"GIF89a\x01"),
    ],
)
def test_an_image_of_unknown_size_counts_the_most_an_image_costs(url):
    assert image_size(url) is None
    request = {
        "messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}
        ]
    }
    assert estimate_tokens(request) == 4 + IMAGE_MOST_TOKENS == 4 + 1445


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    [
        (1024, 1024, 765),  # OpenAI's examples: 768 x 768, four tiles
        (2048, 4096, 1105),  # 768 x 1536, six tiles
        (4096, 8192, 1105),
        (512, 512, 255),  # one tile: not scaled up
        (100, 3000, 765),  # 68 x 2048: four tiles
        (3000, 1024, 1445),  # 2048 x 699: eight tiles, the most
        (513, 512, 425),
    ],
)
def test_a_high_detail_image_costs_85_and_170_a_tile(width, height, tokens):
    assert high_detail_tokens(width, height) == tokens


def test_images_and_other_parts_count_what_providers_charge_not_their_base64():
    # A 750 kB PNG: once booked as 250,135 tokens, holding every other caller back ~75 s.
    big = data_url(png(1024, 1024, padding=750_000))
    parts = [
        {"type": "text", "text": "x" * 40},
        {"type": "image_url", "image_url": {"url": big}},
        {"type": "image_url", "image_url": {"url": big, "detail": "low"}},
        {"type": "image_url", "image_url": big},
        {"type": "input_audio", "input_audio": {"data": "A" * 100_000, "format": "wav"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64," + "A" * 10**5}},
        "y" * 8,
    ]
    request = {"messages": [{"role": "user", "content": parts}], "max_tokens": 100}
    expected = 4 + (40 + 8) // 4 + 765 + 85 + 765 + 2 * AUDIO_OR_FILE_TOKENS + 100
    assert estimate_tokens(request) == expected
    odd = {"type": "refusal", "refusal": "no"}
    assert estimate_tokens({"messages": [{"content": [odd]}]}) == 4 + -(-len(str(odd)) // 4)
    assert estimate_tokens({"messages": [{"content": 12345}]}) == 4 + 2


def test_a_message_with_an_image_is_no_burden_on_the_limiter(clock):
    limiter = simulated(clock, tpm=900_000)  # 15,000 tokens of burst
    image = {"type": "image_url", "image_url": {"url": data_url(png(800, 600, 750_000))}}
    request = {"messages": [{"role": "user", "content": [image]}]}
    for _ in range(5):
        limiter.call(30, request, lambda: None, no_count)
    assert clock.slept == []  # once, 16 s for each


# Against the loopback server: the wiring, on the simulated clock.


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


BIG_USAGE = {"prompt_tokens": 1000, "completion_tokens": 2000, "total_tokens": 3000}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("run_async", [False, True])
def test_the_usage_the_server_reports_holds_later_requests_back(
    server, clock, streaming, run_async
):
    # 1,000 tokens a second: a reply that used 3,000 tokens pushes the next request back 2 s
    # and a bit, though its estimate was a few tokens.
    server.push(Reply("big", usage=BIG_USAGE), Reply("small"))
    llm = make_model(server, simulated(clock, tpm=60_000))
    stream = (lambda _: None) if streaming else None
    start = clock.now

    async def twice() -> None:
        try:
            for _ in range(2):
                await llm.agenerate([Message.user("hi")], streaming_func=stream)
        finally:
            await llm.aclose()

    if run_async:
        asyncio.run(twice())
    else:
        for _ in range(2):
            llm.generate([Message.user("hi")], streaming_func=stream)
        llm.close()
    assert len(server.requests) == 2
    assert clock.now - start == 3000 * 60_000 * SECOND // 60_000 // 1000 - SECOND


@pytest.mark.timeout(30)
@pytest.mark.parametrize("run_async", [False, True])
def test_a_retry_after_from_the_server_pauses_the_other_models(server, clock, run_async):
    limiter = simulated(clock, rpm=6000)
    patient = Backoff(initial=0.001, maximum=0.005, retry_after_cap=5)
    throttled = make_model(server, limiter, max_attempts=1, backoff=patient)
    other = make_model(server, limiter, backoff=patient)
    server.fail(Fault.http(429, "slow down", {"Retry-After": "2"}))
    server.push("later")

    async def refused() -> None:
        try:
            await throttled.agenerate([Message.user("hi")])
        finally:
            await throttled.aclose()

    with pytest.raises(ModelStatusError):
        if run_async:
            asyncio.run(refused())
        else:
            throttled.generate([Message.user("hi")])
    before = clock.now
    assert other.generate([Message.user("hi")]).content == "later"
    assert clock.now - before == 2 * SECOND
    other.close()
    throttled.close()


@pytest.mark.timeout(30)
def test_each_attempt_is_a_request(server, clock):
    limiter = simulated(clock, rpm=60)  # one a second
    quick = Backoff(initial=0.001, maximum=0.005)
    llm = make_model(server, limiter, max_attempts=3, backoff=quick)
    server.fail(Fault.http(500, "oops"), Fault.http(500, "oops"))
    server.push("third time")
    start = clock.now
    assert llm.generate([Message.user("hi")]).content == "third time"
    assert len(server.requests) == 3
    assert clock.now - start == 2 * (SECOND + 1)  # the two retries waited their turns
    llm.close()


@pytest.mark.timeout(30)
def test_embeddings_share_the_limiter(server, clock):
    limiter = simulated(clock, rpm=60, tpm=10**6)
    embeddings = llms.OpenAIEmbeddings(
        base_url=server.base_url, api_key=TEST_API_KEY, rate_limiter=limiter
    )
    chat = make_model(server, limiter)
    server.push("ok")
    start = clock.now
    embeddings.embed_documents(["a", "bb"])
    assert chat.generate([Message.user("hi")]).content == "ok"
    assert clock.now - start == SECOND + 1  # the chat call waited its turn after the embedding
    chat.close()
    embeddings.close()


# One smoke test in real time: the limiter really holds requests back.


@pytest.mark.timeout(60)
def test_concurrent_runs_are_held_back_in_real_time(server):
    limiter = RateLimiter(requests_per_minute=600)  # 10 at once, then one every ~0.1 s
    server.push(*[f"answer {i}" for i in range(30)])
    llm = make_model(server, limiter)
    chain = chains.LLMChain(prompts.PromptTemplate.from_template("question {n}"), llm)

    async def main() -> list[dict[str, object]]:
        try:
            return await chains.abatch(chain, [{"n": i} for i in range(30)], max_workers=30)
        finally:
            await llm.aclose()

    started = time.monotonic()
    results = asyncio.run(main())
    elapsed = time.monotonic() - started
    assert {r["text"] for r in results} == {f"answer {i}" for i in range(30)}
    assert len(server.requests) == 30
    # 20 after the burst, 60/591 s apart: a busy machine can only make it longer. (Not the
    # arrivals at the server: there, a burst's new connections may be read a second late.)
    assert elapsed >= 2.0


def test_a_reported_token_count_is_a_whole_number_or_none():
    assert [reported_count(v) for v in (12, 12.0, 0, -3)] == [12, 12, 0, -3]
    assert [reported_count(v) for v in (None, True, "12", 12.5, [12])] == [None] * 5
