"""What every class backed by an OpenAI-compatible server shares: where the server is, how
calls are retried, and the lifecycle of the clients."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar
from urllib.parse import urlsplit, urlunsplit

from chainkit._redact import mask_url, url_without_credentials
from chainkit.llms.errors import ModelConfigError, ModelTypeError
from chainkit.llms.openai._connection import Connection
from chainkit.llms.retry import Backoff, RetryPolicy, check_seconds

if TYPE_CHECKING:
    from chainkit.llms.rate_limit import RateLimiter

T = TypeVar("T")

OPENAI_URL = "https://api.openai.com/v1"
"""Where the openai SDK sends requests when no base URL is given."""


class OpenAIEndpoint:
    """Holds the connection, the retry policy and the rate limiter; `model` names what is
    asked for.

    The settings are checked here (the model name by `check_model_name`), so that a wrong one
    fails at construction saying what was expected, not later, after retries, with an error
    about something else.
    """

    model: str

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        max_attempts: int,
        backoff: Backoff | None,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        for name, value in (("base_url", base_url), ("api_key", api_key)):
            if value is not None and not isinstance(value, str):
                # Not the value: an api_key given as bytes is still a key.
                raise ModelTypeError(f"{name} must be a str or None, got {type(value).__name__}")
        check_seconds("timeout", timeout)
        self.retry_policy = RetryPolicy(max_attempts, Backoff() if backoff is None else backoff)
        if rate_limiter is not None:
            _check_rate_limiter(rate_limiter)
        self.rate_limiter = rate_limiter
        self._connection = Connection(base_url, api_key, timeout)
        key = self._connection._api_key
        if key is not None:
            _check_key(key, "api_key" if api_key else "OPENAI_API_KEY")
        url = self._connection.base_url
        if url is not None:
            _check_url(url, "base_url" if base_url else "OPENAI_BASE_URL", key)

    @property
    def base_url(self) -> str | None:
        return self._connection.base_url

    @property
    def server_url(self) -> str:
        """The server's URL as traces show it: without credentials, OpenAI's without a
        base URL."""
        return url_without_credentials(self.base_url or OPENAI_URL)

    def _limited(
        self,
        request: Mapping[str, Any],
        attempt: Callable[[], T],
        tokens_used: Callable[[T], int | None],
    ) -> Callable[[], T]:
        """`attempt`, made to wait for the rate limiter, if there is one."""
        limiter = self.rate_limiter
        if limiter is None:
            return attempt
        cap = self.retry_policy.backoff.retry_after_cap
        return functools.partial(limiter.call, cap, request, attempt, tokens_used)

    def _alimited(
        self,
        request: Mapping[str, Any],
        attempt: Callable[[], Awaitable[T]],
        tokens_used: Callable[[T], int | None],
    ) -> Callable[[], Awaitable[T]]:
        """Async twin of `_limited`."""
        limiter = self.rate_limiter
        if limiter is None:
            return attempt
        cap = self.retry_policy.backoff.retry_after_cap
        return functools.partial(limiter.acall, cap, request, attempt, tokens_used)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, base_url={_shown_url(self.base_url)!r}, "
            f"api_key={self._connection.masked_key!r})"
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def close(self) -> None:
        """Closes the sync client's pooled connections."""
        self._connection.close()

    async def aclose(self) -> None:
        """Closes the async client's pooled connections; call it before the event loop ends."""
        await self._connection.aclose()


def _check_rate_limiter(limiter: object) -> None:
    from chainkit.llms.rate_limit import RateLimiter

    if not isinstance(limiter, RateLimiter):
        raise ModelTypeError(
            f"rate_limiter must be an llms.RateLimiter, got {type(limiter).__name__}; e.g. "
            "rate_limiter=llms.RateLimiter(requests_per_minute=500, tokens_per_minute=200_000)"
        )


def _shown_url(url: str | None) -> str | None:
    """`url` without user info or query string, where credentials may hide."""
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def check_model_name(model: object, source: str) -> None:
    """Raises unless `model` names a model: a str, not empty, without spaces around it."""
    if not isinstance(model, str):
        raise ModelTypeError(f"{source} must be a model name (str), got {type(model).__name__}")
    if not model.strip():
        raise ModelConfigError(f"{source} is empty; name a model, e.g. 'gpt-4o-mini'")
    if model != model.strip() or not model.isprintable():
        raise ModelConfigError(
            f"{source} {model!r} has spaces or control characters around or in it: "
            f"did you mean {model.strip()!r}?"
        )


def _check_key(key: str, source: str) -> None:
    # An HTTP header cannot carry these; the request would fail on every attempt.
    if not (key.isascii() and key.isprintable()) or any(c.isspace() for c in key):
        raise ModelConfigError(
            f"{source} holds a space, a line break or a non-ASCII character, which no API key "
            "has: copy the key again, without what surrounds it"
        )


def _check_url(url: str, source: str, key: str | None) -> None:
    """Raises ModelConfigError naming `url` (credentials masked) unless it is an http(s) URL
    with a host, suggesting the URL meant where it can tell."""
    problem, suggestion = _url_problem(url)
    if problem is None:
        return
    hint = f": did you mean {mask_url(suggestion, key)!r}?" if suggestion else ""
    raise ModelConfigError(
        f"{source} {mask_url(url, key)!r} {problem}{hint} (expected a URL such as "
        "'http://localhost:8000/v1' or 'https://api.openai.com/v1')"
    )


def _url_problem(url: str) -> tuple[str | None, str | None]:
    """What is wrong with `url` as a server's address (None: nothing), and the URL probably
    meant, if there is one."""
    if any(c.isspace() or not c.isprintable() for c in url):
        stripped = url.strip()
        fixed = stripped if stripped.isprintable() and " " not in stripped else None
        return "has spaces or control characters in it", fixed
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:  # an unclosed IPv6 bracket, a port not a number or too big
        return f"is not a valid URL ({error})", None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        if "://" not in url:
            return "has no scheme", f"http://{url.lstrip(':/')}"
        return f"uses the scheme {parts.scheme!r}, not http or https", None
    if not parts.netloc:  # "http:/host" or "http:host"
        rest = url.partition(":")[2].lstrip("/")
        return "has no host", f"{scheme}://{rest}" if rest else None
    if not parts.hostname:
        return "has no host", None
    if port == 0:
        return "has port 0", None
    return None, None
