"""The one retry policy of the OpenAI backend, built into tenacity's sync and async drivers.

Retried: 408, 409, 429 and 5xx answers, timeouts, broken connections and unreadable replies
(a body that is not JSON or ends early is nearly always a proxy or a connection glitch, like a
5xx). Not retried: every other status (400, 401, 403, 404, 422...), and replies read whole
but of the wrong shape (ModelReplyShapeError), which a second try would not change.
tenacity (like the date parsing of Retry-After) is imported on first use, so importing
chainkit.llms stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from chainkit.callbacks import Handler
from chainkit.llms.errors import (
    ModelConnectionError,
    ModelReplyShapeError,
    ModelResponseError,
    ModelStatusError,
)

if TYPE_CHECKING:
    from tenacity import AsyncRetrying, RetryCallState, Retrying

_RETRYABLE_STATUS = frozenset((408, 409, 429))


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long to wait between attempts, in seconds.

    Attempt n waits `initial * 2**(n-1)` plus up to `initial` of random jitter, at most
    `maximum`. A server's Retry-After or retry-after-ms header replaces that wait, capped at
    `retry_after_cap` so a server cannot stall a run for long.
    """

    initial: float = 0.5
    maximum: float = 8.0
    retry_after_cap: float = 30.0

    def __post_init__(self) -> None:
        for name in ("initial", "maximum", "retry_after_cap"):
            if getattr(self, name) < 0:
                raise ValueError(f"Backoff.{name} must not be negative, got {getattr(self, name)}")


def is_retryable(error: BaseException) -> bool:
    if isinstance(error, ModelStatusError):
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
    """At most `max_attempts` attempts, `backoff` between them; one policy, two drivers."""

    max_attempts: int
    backoff: Backoff

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")

    def retrying(self, callbacks: Handler | None) -> Retrying:
        """The sync driver: call it with the function that makes one attempt."""
        import tenacity

        return tenacity.Retrying(**self._settings(callbacks))

    def async_retrying(self, callbacks: Handler | None) -> AsyncRetrying:
        """The async driver of the same settings."""
        import tenacity

        return tenacity.AsyncRetrying(**self._settings(callbacks))

    def _settings(self, callbacks: Handler | None) -> dict[str, Any]:
        import tenacity

        backoff = self.backoff
        exponential = tenacity.wait_exponential_jitter(
            multiplier=backoff.initial, max=backoff.maximum, jitter=backoff.initial
        )

        def wait(state: RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome is not None else None
            if isinstance(error, ModelStatusError) and error.retry_after is not None:
                return min(error.retry_after, backoff.retry_after_cap)
            return exponential(state)

        def report(state: RetryCallState) -> None:
            assert callbacks is not None and state.outcome is not None
            error = state.outcome.exception()
            assert error is not None
            callbacks.handle_retry(state.attempt_number, error, state.upcoming_sleep)

        return {
            "stop": tenacity.stop_after_attempt(self.max_attempts),
            "wait": wait,
            "retry": tenacity.retry_if_exception(is_retryable),
            "before_sleep": report if callbacks is not None else None,
            "reraise": True,
        }
