"""RateLimiter: per-minute request and token limits shared by every model that holds it.

A limiter is a schedule (`RateBucket`) and the waiting around it. The schedule is plain
arithmetic under a `threading.Lock`, held for microseconds and never while waiting, so any
number of threads and event loops may share one limiter: sync callers wait with
`time.sleep`, async ones with `asyncio.sleep`, and no event loop is ever blocked.

The schedule is a token bucket in its "virtual scheduling" form (GCRA): each request is given
a start time when it asks, so callers start in turn, evenly spaced, instead of all retrying at
once when a window opens.

- Requests: after an idle spell, up to one second's worth (`requests_per_minute / 60`, at
  least 1) start at once, and the rest follow evenly spaced. The spacing is set so that no
  60-second window ever holds more than `requests_per_minute` starts (rounded down), burst
  included: the steady rate is `requests_per_minute - burst + 1` a minute, less than 1/60
  under the limit. Below one a minute, requests start one per `60 / requests_per_minute` s.
- Tokens: a request is charged an estimate when it starts (a quarter of its characters plus
  its `max_tokens`, the way OpenAI counts it) and corrected by the usage the server reports
  once it ends; a failed request keeps its estimate. The burst is one second's worth of
  tokens, and a request larger than that still starts, pushing later ones back by its size.
- A 429 or 503 answer with Retry-After pauses every caller of the limiter until then (capped
  as the model's `Backoff.retry_after_cap` says), and pushes the whole schedule back by as
  much, so callers already waiting keep their spacing after the pause.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from chainkit.llms.errors import ModelConfigError, ModelStatusError, ModelTypeError

T = TypeVar("T")

_PAUSING_STATUS = frozenset((429, 503))
_CHARACTERS_PER_TOKEN = 4
_TOKENS_PER_MESSAGE = 4
"""What a chat format adds around each message (role, separators), as OpenAI counts it."""

Reservation = tuple[float, float, float]
"""(seconds to wait, the start time given, the schedule's shift then), as a bucket returns
them; the last two, on the bucket's own clock, are only handed back to `RateBucket.wait_left`."""


class RateBucket(Protocol):
    """Where a limiter's schedule lives: in this process, or (chainkit.distributed) in a
    Ray actor that the limiters of many processes share."""

    def reserve(self, tokens: float) -> Reservation:
        """Books a start for one request of `tokens` estimated tokens."""

    def wait_left(self, start: float, shift: float) -> float:
        """Seconds still to wait for a booked start, a pause since the booking included."""

    def settle(self, estimated: float, used: float) -> None:
        """Corrects a request's token charge from its estimate to what it used."""

    def pause(self, seconds: float) -> None:
        """Stops every start for `seconds` from now, pushing booked starts back."""


class AsyncRateBucket(RateBucket, Protocol):
    """A bucket whose operations cost a round trip, with async twins for event loops."""

    async def areserve(self, tokens: float) -> Reservation: ...

    async def await_left(self, start: float, shift: float) -> float: ...

    async def asettle(self, estimated: float, used: float) -> None: ...

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


class LocalBucket:
    """The schedule of one process: `RateBucket` as arithmetic under a lock.

    Each limit keeps the time its schedule is booked up to (`_next`): a request may start at
    `_next - tolerance`, and books `interval * cost` more. A pause moves both schedules, and
    `_shift` records by how much in total, so a caller woken at its booked start can tell
    whether it was pushed back meanwhile.
    """

    def __init__(
        self,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._request_interval = self._request_tolerance = 0.0
        if requests_per_minute is not None:
            whole = math.floor(requests_per_minute)
            burst = max(1, whole // 60)
            # Any n starts span at least (n - burst) intervals, so (whole - burst + 1)
            # intervals to the minute keep every 60-second window within the limit.
            per_minute = whole - burst + 1 if whole >= 1 else requests_per_minute
            self._request_interval = 60 / per_minute
            self._request_tolerance = (burst - 1) * self._request_interval
        self._token_interval = 0.0 if tokens_per_minute is None else 60 / tokens_per_minute
        self._token_tolerance = 1.0  # one second's worth of tokens
        now = clock()
        self._next_request = self._next_token = now
        self._paused_until = now
        self._shift = 0.0

    def reserve(self, tokens: float) -> Reservation:
        with self._lock:
            now = self._clock()
            start = max(now, self._paused_until)
            if self._request_interval:
                start = max(start, self._next_request - self._request_tolerance)
            if self._token_interval:
                start = max(start, self._next_token - self._token_tolerance)
                self._next_token = max(self._next_token, start) + tokens * self._token_interval
            if self._request_interval:
                self._next_request = max(self._next_request, start) + self._request_interval
            return start - now, start, self._shift

    def wait_left(self, start: float, shift: float) -> float:
        with self._lock:
            return start + self._shift - shift - self._clock()

    def settle(self, estimated: float, used: float) -> None:
        if self._token_interval:
            with self._lock:
                self._next_token += (used - estimated) * self._token_interval

    def pause(self, seconds: float) -> None:
        with self._lock:
            now = self._clock()
            until = now + seconds
            if until <= self._paused_until:
                return
            push = until - max(now, self._paused_until)
            self._paused_until = until
            self._shift += push
            self._next_request = max(self._next_request, now) + push
            self._next_token = max(self._next_token, now) + push


class RateLimiter:
    """Keeps the requests and tokens sent through it under per-minute limits.

    Give one limiter to every model that calls the same provider account
    (`llms.OpenAI(..., rate_limiter=limiter)`, `llms.OpenAIEmbeddings(...)` too): threads,
    event loops and models then share its limits. A limit left as None is not enforced; a
    limiter with neither still shares Retry-After pauses. Each attempt of a call (retries
    included) is a request.

    Requests start one after another, evenly spaced, with a burst of one second's worth after
    an idle spell, and never more than `requests_per_minute` in any 60 seconds. Tokens are
    charged an estimate when a request starts and corrected by the usage the server reports.
    When a call gets a 429 (or 503) with Retry-After, every caller waits until then.
    """

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
    ) -> None:
        self.requests_per_minute = check_limit("requests_per_minute", requests_per_minute)
        self.tokens_per_minute = check_limit("tokens_per_minute", tokens_per_minute)
        self._bucket: RateBucket = LocalBucket(self.requests_per_minute, self.tokens_per_minute)
        self._async_bucket: AsyncRateBucket | None = None

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
        estimate = self._estimate(request)
        self._wait(estimate)
        try:
            result = attempt()
        except ModelStatusError as error:
            self._answer_pause(error, pause_cap)
            raise
        if estimate:
            used = tokens_used(result)
            if used is not None:
                self._bucket.settle(estimate, used)
        return result

    async def acall(
        self,
        pause_cap: float,
        request: Mapping[str, Any],
        attempt: Callable[[], Awaitable[T]],
        tokens_used: Callable[[T], int | None],
    ) -> T:
        """Async twin of `call`."""
        estimate = self._estimate(request)
        await self._await(estimate)
        try:
            result = await attempt()
        except ModelStatusError as error:
            if self._async_bucket is None:
                self._answer_pause(error, pause_cap)
            elif (seconds := _pause_asked(error, pause_cap)) is not None:
                await self._async_bucket.apause(seconds)
            raise
        if estimate:
            used = tokens_used(result)
            if used is not None:
                if self._async_bucket is None:
                    self._bucket.settle(estimate, used)
                else:
                    await self._async_bucket.asettle(estimate, used)
        return result

    def _estimate(self, request: Mapping[str, Any]) -> int:
        """The tokens charged when `request` starts; 0 without a token limit."""
        return 0 if self.tokens_per_minute is None else estimate_tokens(request)

    def _wait(self, tokens: float) -> None:
        bucket = self._bucket
        wait, start, shift = bucket.reserve(tokens)
        while wait > 0:
            time.sleep(wait)
            wait = bucket.wait_left(start, shift)

    async def _await(self, tokens: float) -> None:
        import asyncio  # loaded already by the running event loop, not at import

        bucket = self._async_bucket
        if bucket is None:
            wait, start, shift = self._bucket.reserve(tokens)
            while wait > 0:
                await asyncio.sleep(wait)
                wait = self._bucket.wait_left(start, shift)
            return
        wait, start, shift = await bucket.areserve(tokens)
        while wait > 0:
            await asyncio.sleep(wait)
            wait = await bucket.await_left(start, shift)

    def _answer_pause(self, error: ModelStatusError, cap: float) -> None:
        seconds = _pause_asked(error, cap)
        if seconds is not None:
            self._bucket.pause(seconds)


def _pause_asked(error: ModelStatusError, cap: float) -> float | None:
    if error.status_code in _PAUSING_STATUS and error.retry_after is not None:
        return min(error.retry_after, cap)
    return None


def _shown(limit: float | None) -> str:
    return "None" if limit is None else f"{limit:g}"


def estimate_tokens(request: Mapping[str, Any]) -> int:
    """Tokens a chat or embeddings request may use, before the server says: a quarter of the
    characters of its messages (or inputs), plus the reply's `max_tokens` when set."""
    characters = 0
    pieces = 0
    for message in request.get("messages") or ():
        pieces += 1
        characters += len(_text_of(message.get("content")))
        for call in message.get("tool_calls") or ():
            characters += len(str(call.get("function", {}).get("arguments", "")))
    inputs = request.get("input")
    if inputs is not None:
        for text in [inputs] if isinstance(inputs, str) else inputs:
            pieces += 1
            characters += len(str(text))
    for tool in request.get("tools") or ():
        characters += len(str(tool))
    most = request.get("max_tokens") or request.get("max_completion_tokens")
    if isinstance(most, bool) or not isinstance(most, int):
        most = 0  # not a count: the server will say so; the estimate goes without it
    return -(-characters // _CHARACTERS_PER_TOKEN) + _TOKENS_PER_MESSAGE * pieces + most


def _text_of(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return str(content)
