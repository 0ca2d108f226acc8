"""RateLimiter: per-minute request and token limits shared by every model that holds it.

A limiter is a schedule (`LocalBucket`) and the waiting around it. The schedule is integer
arithmetic on nanoseconds under a `threading.Lock`, held for microseconds and never while
waiting, so any number of threads and event loops may share one limiter: sync callers wait
with `time.sleep`, async ones with `asyncio.sleep`, and no event loop is ever blocked.

Each request is booked a start when it asks, after every booking before it (first come, first
served), and the schedule keeps a log of the starts of the last minute and of those booked:

- Limits: no window of 60 seconds, ends included, holds more than `requests_per_minute`
  starts (rounded down; below one a minute, two starts are more than `60 / requests_per_minute`
  seconds apart), nor more than `tokens_per_minute` tokens charged to its starts. The log is
  what enforces this, exactly, whatever else happens: pauses, cancelled waiters, corrections.
- Pace: within the limits, requests start evenly spaced ("virtual scheduling", GCRA): after
  an idle spell up to one second's worth (`requests_per_minute / 60`, at least 1) start at
  once and the rest follow at `requests_per_minute - burst + 1` a minute, so that the pace
  alone keeps every window within the limit. Tokens are paced likewise, with a burst of one
  second's worth; a request larger than that starts, and pushes later ones back by its size.
- Tokens: a request is charged an estimate when it starts (`estimate_tokens`) and corrected
  to the usage the server reports once it ends; a failed request keeps its estimate. A
  request whose estimate exceeds `tokens_per_minute` could never start: it is refused.
- A waiter that gives up (a cancelled task, an interrupt) hands its booking back.
- A 429 or 503 answer with Retry-After pauses every caller of the limiter until then (capped
  as the model's `Backoff.retry_after_cap` says): the callers already waiting are booked
  again, in their order, from the end of the pause.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from fractions import Fraction
from typing import Any, Protocol, TypeVar

from chainkit._text import counted
from chainkit._tokens import estimate_tokens, reported_count
from chainkit.llms.errors import ModelConfigError, ModelStatusError, ModelTypeError

T = TypeVar("T")

_PAUSING_STATUS = frozenset((429, 503))
_SECOND = 1_000_000_000
"""Nanoseconds, the unit of the schedule, so that its sums are exact."""
_MINUTE = 60 * _SECOND

Reservation = tuple[float, int]
"""(seconds to wait, the booking's ticket), as a bucket returns them; the ticket is only
handed back to the bucket."""


class RateBucket(Protocol):
    """Where a limiter's schedule lives: in this process, or (chainkit.distributed) in a
    Ray actor that the limiters of many processes share."""

    def reserve(self, tokens: int) -> Reservation:
        """Books a start for one request of `tokens` estimated tokens."""

    def wait_left(self, ticket: int) -> float:
        """Seconds still to wait for a booking, a pause since included; at 0 or below the
        request has started."""

    def settle(self, ticket: int, used: int) -> None:
        """Corrects a started request's token charge to what it used."""

    def cancel(self, ticket: int) -> None:
        """Gives back a booking whose request will not start after all."""

    def pause(self, seconds: float) -> None:
        """Stops every start for `seconds` from now, booking waiting requests again after."""


class AsyncRateBucket(RateBucket, Protocol):
    """A bucket with async twins for event loops, for buckets whose operations cost a
    round trip."""

    async def areserve(self, tokens: int) -> Reservation: ...

    async def await_left(self, ticket: int) -> float: ...

    async def asettle(self, ticket: int, used: int) -> None: ...

    async def acancel(self, ticket: int) -> None: ...

    async def apause(self, seconds: float) -> None: ...


def check_limit(name: str, value: object) -> float | None:
    """`value` as a limit per minute: None, or a finite number above zero."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelTypeError(
            f"{name} must be a number per minute or None, got {type(value).__name__}"
        )
    if not math.isfinite(value) or value <= 0:
        raise ModelConfigError(f"{name} must be a finite number above zero, or None, got {value!r}")
    return float(value)


class _Booking:
    """One request's place in the schedule: when it starts (ns), the tokens charged to it,
    and whether its caller was let go already."""

    __slots__ = ("start", "started", "ticket", "tokens")

    def __init__(self, ticket: int, tokens: int) -> None:
        self.ticket = ticket
        self.start = 0
        self.tokens = tokens
        self.started = False


class _RequestRule:
    """`requests_per_minute` as integers: at most `most` starts in any `window` ns (ends
    included), paced `interval` ns apart with `tolerance` ns of burst."""

    def __init__(self, per_minute: float) -> None:
        whole = math.floor(per_minute)
        if whole >= 1:
            self.most, self.window = whole, _MINUTE
        else:  # one start in each 60 / per_minute seconds
            self.most, self.window = 1, math.floor(Fraction(_MINUTE) / Fraction(per_minute))
        burst = max(1, self.most // 60)
        # Any n starts span at least (n - burst) intervals: (most - burst + 1) intervals
        # longer than the window keep every window within the limit by pace alone.
        self.interval = self.window // (self.most - burst + 1) + 1
        self.tolerance = (burst - 1) * self.interval


class _TokenRule:
    """`tokens_per_minute`, exactly (a float is a fraction), with its pace in ns a token."""

    def __init__(self, per_minute: float) -> None:
        self.most = Fraction(per_minute)
        self.window = _MINUTE
        self.tolerance = _SECOND

    def duration(self, tokens: int) -> int:
        """Nanoseconds of pace `tokens` take, rounded up."""
        scaled = tokens * _MINUTE * self.most.denominator
        return -(-scaled // self.most.numerator)


class LocalBucket:
    """The schedule of one process: `RateBucket` as arithmetic under a lock.

    `_log` holds the bookings in order of start: every one not yet started, and the started
    ones as long as they may share a window with a later start. The pace is kept by the time
    each schedule is booked up to (`_next_request`, `_next_token`): a request may start at
    that time less the rule's tolerance, and books its own share more.
    """

    def __init__(
        self,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._requests = None if requests_per_minute is None else _RequestRule(requests_per_minute)
        self._tokens = None if tokens_per_minute is None else _TokenRule(tokens_per_minute)
        windows = [rule.window for rule in (self._requests, self._tokens) if rule is not None]
        self._memory = max(windows, default=0)
        self._log: deque[_Booking] = deque()
        self._tickets: dict[int, _Booking] = {}
        self._numbers = itertools.count()
        self._logged_tokens = 0
        now = clock()
        self._next_request = self._next_token = self._paused_until = now

    def reserve(self, tokens: int) -> Reservation:
        with self._lock:
            now = self._clock()
            self._forget_before(now - self._memory)
            booking = _Booking(next(self._numbers), tokens)
            self._book(booking, now)
            self._tickets[booking.ticket] = booking
            return self._left(booking, now), booking.ticket

    def wait_left(self, ticket: int) -> float:
        with self._lock:
            booking = self._tickets.get(ticket)
            return 0.0 if booking is None else self._left(booking, self._clock())

    def settle(self, ticket: int, used: int) -> None:
        with self._lock:
            booking = self._tickets.get(ticket)
            if booking is None:  # out of every window still to come
                return
            change, booking.tokens = used - booking.tokens, used
            self._logged_tokens += change
            if self._tokens is not None:
                self._next_token += self._tokens.duration(change)

    def cancel(self, ticket: int) -> None:
        with self._lock:
            booking = self._tickets.get(ticket)
            if booking is not None and not booking.started:
                del self._tickets[ticket]
                self._log.remove(booking)
                self._unbook(booking)

    def pause(self, seconds: float) -> None:
        with self._lock:
            now = self._clock()
            until = now + math.ceil(seconds * _SECOND)
            if until <= self._paused_until:
                return
            self._paused_until = until
            waiting = [booking for booking in self._log if not booking.started]
            self._log = deque(booking for booking in self._log if booking.started)
            for booking in waiting:
                self._unbook(booking)
            for booking in waiting:
                self._book(booking, now)

    # The async twins: the lock is held for microseconds, so an event loop may call these.

    async def areserve(self, tokens: int) -> Reservation:
        return self.reserve(tokens)

    async def await_left(self, ticket: int) -> float:
        return self.wait_left(ticket)

    async def asettle(self, ticket: int, used: int) -> None:
        self.settle(ticket, used)

    async def acancel(self, ticket: int) -> None:
        self.cancel(ticket)

    async def apause(self, seconds: float) -> None:
        self.pause(seconds)

    def _left(self, booking: _Booking, now: int) -> float:
        """Seconds until `booking` starts; once none are left, it has started."""
        left = booking.start - now
        if left <= 0:
            booking.started = True
        return left / _SECOND

    def _book(self, booking: _Booking, now: int) -> None:
        """Gives `booking` the earliest start that keeps the pace and every window, after
        every booking so far, and adds it to the log. A booking made again (after a pause)
        never moves earlier: its caller sleeps until the start it was told, and would start
        later than booked."""
        last = self._log[-1].start if self._log else now
        start = max(now, self._paused_until, last, booking.start)
        requests, tokens = self._requests, self._tokens
        if requests is not None:
            start = max(start, self._next_request - requests.tolerance)
            if len(self._log) >= requests.most:
                start = max(start, self._log[-requests.most].start + requests.window + 1)
        if tokens is not None:
            start = max(start, self._next_token - tokens.tolerance, self._token_room(booking))
            self._next_token = max(self._next_token, start) + tokens.duration(booking.tokens)
        if requests is not None:
            self._next_request = max(self._next_request, start) + requests.interval
        booking.start = start
        self._log.append(booking)
        self._logged_tokens += booking.tokens

    def _token_room(self, booking: _Booking) -> int:
        """The earliest start at which the last minute's tokens and the booking's fit the
        limit: after the oldest starts that must leave the window first."""
        assert self._tokens is not None
        most, charged, earliest = self._tokens.most, self._logged_tokens, 0
        for logged in self._log:
            if charged + booking.tokens <= most:
                break
            charged -= logged.tokens
            earliest = logged.start + self._tokens.window + 1
        return earliest

    def _unbook(self, booking: _Booking) -> None:
        """Takes a booking's share of the log and of the pace back."""
        self._logged_tokens -= booking.tokens
        if self._requests is not None:
            self._next_request -= self._requests.interval
        if self._tokens is not None:
            self._next_token -= self._tokens.duration(booking.tokens)

    def _forget_before(self, moment: int) -> None:
        """Drops the started bookings that no window still to come can hold."""
        log = self._log
        while log and log[0].started and log[0].start < moment:
            forgotten = log.popleft()
            self._logged_tokens -= forgotten.tokens
            del self._tickets[forgotten.ticket]


class RateLimiter:
    """Keeps the requests and tokens sent through it under per-minute limits.

    Give one limiter to every model that calls the same provider account
    (`llms.OpenAI(..., rate_limiter=limiter)`, `llms.OpenAIEmbeddings(...)` too): threads,
    event loops and models then share its limits. A limit left as None is not enforced; a
    limiter with neither still shares Retry-After pauses. Each attempt of a call (retries
    included) is a request.

    No 60 seconds ever see more than `requests_per_minute` starts, nor more than
    `tokens_per_minute` tokens charged to starts; within that, requests start evenly spaced,
    with a burst of one second's worth after an idle spell. Tokens are charged an estimate
    when a request starts and corrected by the usage the server reports. A caller that stops
    waiting gives its place back. When a call gets a 429 (or 503) with Retry-After, every
    caller waits until then.
    """

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
    ) -> None:
        self.requests_per_minute = check_limit("requests_per_minute", requests_per_minute)
        self.tokens_per_minute = check_limit("tokens_per_minute", tokens_per_minute)
        self._bucket: AsyncRateBucket = LocalBucket(
            self.requests_per_minute, self.tokens_per_minute
        )
        # How callers wait; tests put a simulated clock's in their place.
        self._sleep: Callable[[float], None] = time.sleep
        self._asleep: Callable[[float], Awaitable[None]] | None = None  # asyncio.sleep

    def __repr__(self) -> str:
        return (
            f"RateLimiter(requests_per_minute={_shown(self.requests_per_minute)}, "
            f"tokens_per_minute={_shown(self.tokens_per_minute)})"
        )

    def __reduce__(self) -> Any:
        # A copy in another process would keep a schedule of its own, and the two together
        # would send twice the limit.
        raise ModelTypeError(
            "an llms.RateLimiter is shared within one process only and cannot be pickled; "
            "to share limits between Ray workers use chainkit.distributed.RayRateLimiter"
        )

    # Around one attempt: wait for its start, then charge what it used.

    def call(
        self,
        pause_cap: float,
        request: Mapping[str, Any],
        attempt: Callable[[], T],
        tokens_used: Callable[[T], int | None],
    ) -> T:
        """`attempt()` once this limiter lets `request` start."""
        ticket = self._wait(self._estimate(request))
        try:
            result = attempt()
        except ModelStatusError as error:
            if (seconds := _pause_asked(error, pause_cap)) is not None:
                self._bucket.pause(seconds)
            raise
        if (used := self._reported(result, tokens_used)) is not None:
            self._bucket.settle(ticket, used)
        return result

    async def acall(
        self,
        pause_cap: float,
        request: Mapping[str, Any],
        attempt: Callable[[], Awaitable[T]],
        tokens_used: Callable[[T], int | None],
    ) -> T:
        """Async twin of `call`."""
        ticket = await self._await(self._estimate(request))
        try:
            result = await attempt()
        except ModelStatusError as error:
            if (seconds := _pause_asked(error, pause_cap)) is not None:
                await self._bucket.apause(seconds)
            raise
        if (used := self._reported(result, tokens_used)) is not None:
            await self._bucket.asettle(ticket, used)
        return result

    def _estimate(self, request: Mapping[str, Any]) -> int:
        """The tokens charged when `request` starts: 0 without a token limit; a request that
        no minute could hold is refused."""
        limit = self.tokens_per_minute
        if limit is None:
            return 0
        tokens = estimate_tokens(request)
        if tokens > limit:
            raise ModelConfigError(
                f"this request is estimated at {counted(tokens, 'token')}, more than the rate "
                f"limiter's tokens_per_minute={_shown(limit)} lets start in a minute, so it could "
                "never be sent: raise tokens_per_minute, or send less (a lower max_tokens, shorter "
                "messages)"
            )
        return tokens

    def _reported(self, result: T, tokens_used: Callable[[T], int | None]) -> int | None:
        """The tokens the server said `result` used, when they correct a charge."""
        if self.tokens_per_minute is None:
            return None
        used = reported_count(tokens_used(result))
        if used is None or used < 0:
            return None  # no count to go by: the estimate stays
        return used

    def _wait(self, tokens: int) -> int:
        """Waits for a start booked for `tokens`; returns its ticket."""
        bucket = self._bucket
        wait, ticket = bucket.reserve(tokens)
        try:
            while wait > 0:
                self._sleep(wait)
                wait = bucket.wait_left(ticket)
        except BaseException:  # interrupted: the place goes to the callers after
            bucket.cancel(ticket)
            raise
        return ticket

    async def _await(self, tokens: int) -> int:
        """Async twin of `_wait`."""
        import asyncio  # loaded already by the running event loop, not at import

        bucket, sleep = self._bucket, self._asleep or asyncio.sleep
        wait, ticket = await bucket.areserve(tokens)
        try:
            while wait > 0:
                await sleep(wait)
                wait = await bucket.await_left(ticket)
        except BaseException:  # cancelled: the place goes to the callers after
            await bucket.acancel(ticket)
            raise
        return ticket


def _pause_asked(error: ModelStatusError, cap: float) -> float | None:
    if error.status_code in _PAUSING_STATUS and error.retry_after is not None:
        return min(error.retry_after, cap)
    return None


def _shown(limit: float | None) -> str:
    return "None" if limit is None else f"{limit:g}"
