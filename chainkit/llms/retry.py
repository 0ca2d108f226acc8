"""The one retry policy of the OpenAI backend (chat and embeddings), built into tenacity's sync
and async drivers.

- Retried: 408, 409, 429 and 5xx answers (ModelStatusError), timeouts and broken connections
  (ModelConnectionError, ModelTimeoutError), and replies a glitch spoils (ModelResponseError):
  a body or stream event that is not JSON or ends early, a stream that ends with neither
  [DONE] nor a finish_reason, an error the server reports inside a 200 reply. These are
  nearly always a proxy or a connection glitch, like a 5xx.
- Not retried, as another attempt would fail alike: every other status (400, 401, 403, 404,
  422...), a 500 that refuses a field of the request (`ModelStatusError.refuses`), and
  replies read whole but of the wrong shape (ModelReplyShapeError): JSON that is no reply
  message, a field of the wrong type, streamed tool calls that do not add up (such as one
  call given two names), and refusals (ModelRefusalError, carrying the model's text: a
  refusal is an answer, not a glitch).

Between attempts the wait is the `Backoff`'s; a server's Retry-After replaces it, up to the
backoff's cap. tenacity (like the date parsing of Retry-After) is imported on first use, so
importing chainkit.llms stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from chainkit.callbacks import Handler
from chainkit.llms.errors import (
    ModelConfigError,
    ModelConnectionError,
    ModelError,
    ModelReplyShapeError,
    ModelResponseError,
    ModelStatusError,
    ModelTypeError,
)

if TYPE_CHECKING:
    from tenacity import RetryCallState

_RETRYABLE_STATUS = frozenset((408, 409, 429))
DEFAULT_TIMEOUT: float = 60
"""Seconds one attempt may take."""
DEFAULT_MAX_ATTEMPTS = 5

T = TypeVar("T")


def check_seconds(name: str, value: object, *, zero_allowed: bool = False) -> None:
    """Raises unless `value` is a finite number of seconds, above zero (or at least zero)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelTypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_allowed):
        least = "zero or more" if zero_allowed else "more than zero"
        raise ModelConfigError(f"{name} must be a finite number of seconds, {least}, got {value!r}")


def check_count(name: str, value: object) -> None:
    """Raises unless `value` is a whole number, at least 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelTypeError(f"{name} must be a whole number, got {type(value).__name__}")
    if value < 1:
        raise ModelConfigError(f"{name} must be at least 1, got {value}")


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long to wait between attempts, in seconds.

    After attempt n fails, the wait is `initial * 2**(n-1)` plus up to `initial` of random
    jitter, at most `maximum`. A server's Retry-After or retry-after-ms header replaces that
    wait, capped at `retry_after_cap` so a server cannot stall a run for long: raise the cap
    to honour longer waits (a rate limit reset in a minute), lower it to fail sooner.
    """

    initial: float = 0.5
    maximum: float = 8.0
    retry_after_cap: float = 30.0

    def wait(self, attempt: int) -> float:
        """Seconds to wait after attempt number `attempt` (the first is 1) failed, when the
        server asked for no wait."""
        import random

        doubled = self.initial * 2.0 ** min(attempt - 1, 64)  # beyond 2**64, maximum anyway
        jitter = random.uniform(0, self.initial)  # noqa: S311  # spreads clients, not a secret
        return min(doubled + jitter, self.maximum)

    def __post_init__(self) -> None:
        for name in ("initial", "maximum", "retry_after_cap"):
            check_seconds(f"Backoff.{name}", getattr(self, name), zero_allowed=True)


def is_retryable(error: BaseException) -> bool:
    if isinstance(error, ModelStatusError):
        if error.refused_field is not None:
            return False
        return error.status_code in _RETRYABLE_STATUS or error.status_code >= 500
    if isinstance(error, ModelReplyShapeError):
        return False
    return isinstance(error, ModelConnectionError | ModelResponseError)


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait a server asks for in retry-after-ms, or Retry-After (seconds or an HTTP date);
    None when it asks for none or the value is unreadable."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            # 0.0 first: max() then turns a "nan" header into no wait, not a NaN one
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """At most `max_attempts` attempts, `backoff` between them, for the errors `retry_if`
    takes (by default those of a model call worth another attempt); one policy, two drivers.

    The error a call ends with tells how many attempts were made (`ModelError.attempts`).
    """

    max_attempts: int
    backoff: Backoff
    retry_if: Callable[[BaseException], bool] = is_retryable

    def __post_init__(self) -> None:
        check_count("max_attempts", self.max_attempts)
        if not isinstance(self.backoff, Backoff):
            raise ModelTypeError(
                f"backoff must be an llms.Backoff, got {type(self.backoff).__name__}; "
                "e.g. backoff=llms.Backoff(initial=1, maximum=10, retry_after_cap=60)"
            )

    def call(
        self,
        callbacks: Handler | None,
        attempt: Callable[[], T],
        streamed: Callable[[], str] | None = None,
        fields: Callable[[], Iterable[str]] | None = None,
    ) -> T:
        """Calls `attempt` (which makes one attempt) until it succeeds or the policy gives up;
        each retry is reported to `callbacks`, with the text the failed attempt had streamed
        (`streamed()`, asked when it failed). `fields()` are the request's fields a server may
        refuse: an error status that refuses one is known for what it is after one answer."""
        import tenacity

        made: list[int] = [0]
        settings = self._settings(callbacks, made, streamed, fields)
        try:
            return tenacity.Retrying(**settings)(attempt)
        except ModelError as error:
            self._record_attempts(error, made[0])
            raise

    async def acall(
        self,
        callbacks: Handler | None,
        attempt: Callable[[], Awaitable[T]],
        streamed: Callable[[], str] | None = None,
        fields: Callable[[], Iterable[str]] | None = None,
    ) -> T:
        """Async twin of `call`."""
        import tenacity

        made: list[int] = [0]
        retrying = tenacity.AsyncRetrying(**self._settings(callbacks, made, streamed, fields))
        try:
            return await retrying(attempt)
        except ModelError as error:
            self._record_attempts(error, made[0])
            raise

    def _record_attempts(self, error: ModelError, attempts: int) -> None:
        error.attempts = attempts
        error.retries_exhausted = attempts >= self.max_attempts and self.retry_if(error)

    def _settings(
        self,
        callbacks: Handler | None,
        made: list[int],
        streamed: Callable[[], str] | None,
        fields: Callable[[], Iterable[str]] | None,
    ) -> dict[str, Any]:
        import tenacity

        backoff, retry_if = self.backoff, self.retry_if

        def retryable(error: BaseException) -> bool:
            if fields is not None and isinstance(error, ModelStatusError):
                error.note_refusal(fields())
            return retry_if(error)

        def wait(state: RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome is not None else None
            if isinstance(error, ModelStatusError) and error.retry_after is not None:
                return min(error.retry_after, backoff.retry_after_cap)
            return backoff.wait(state.attempt_number)

        def note_attempt(state: RetryCallState) -> None:
            made[0] = state.attempt_number

        def report(state: RetryCallState) -> None:
            assert callbacks is not None and state.outcome is not None
            error = state.outcome.exception()
            assert error is not None
            discarded = "" if streamed is None else streamed()
            callbacks.handle_retry(state.attempt_number, error, state.upcoming_sleep, discarded)

        return {
            "stop": tenacity.stop_after_attempt(self.max_attempts),
            "wait": wait,
            "retry": tenacity.retry_if_exception(retryable),
            "before": note_attempt,
            "before_sleep": report if callbacks is not None else None,
            "reraise": True,
        }
