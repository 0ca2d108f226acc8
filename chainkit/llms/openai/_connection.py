"""The connection of the OpenAI backend, shared by its sync and async paths.

`Connection` resolves where the server is, owns the SDK clients and runs each attempt,
turning the SDK's errors into chainkit's with the key masked. The openai package is imported
on first use only."""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, TypeVar

from chainkit._redact import mask_key, redact, remember_key
from chainkit._text import shorten
from chainkit.llms.errors import (
    ModelConfigError,
    ModelConnectionError,
    ModelError,
    ModelRequestError,
    ModelResponseError,
    ModelStatusError,
    ModelTimeoutError,
)
from chainkit.llms.retry import retry_after_seconds

if TYPE_CHECKING:
    import asyncio

    import openai


def load_sdk() -> None:
    """Imports the openai package (a second or more the first time, nothing after): done
    before a model run starts, so that no run's duration includes it."""
    import openai  # noqa: F401


KEYLESS = "not-needed"
"""Sent as the key to servers that need none: the SDK refuses to run without one."""

T = TypeVar("T")


_SERVER_MESSAGE = 1000
"""The most of a server's error message an error quotes."""
_REQUESTS_PER_ASYNC_CLIENT = 64
"""Requests in flight on one async client before the next one takes the new ones. The HTTP
library scans every connection of a client's pool at each request: with 1,000 requests in
flight on one client, the scans cost more than everything else a request does."""


class Deadline:
    """When one attempt must have ended. Its timeout bounds the whole attempt: the HTTP
    library's bounds each read alone, so a server that keeps a stream alive with SSE
    comments (`: ping`) would hold a reply open for ever."""

    __slots__ = ("at", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def check(self) -> None:
        """ModelTimeoutError once the attempt's time is up."""
        if time.monotonic() > self.at:
            raise self.passed()

    def passed(self) -> ModelTimeoutError:
        return ModelTimeoutError(
            f"the reply was not complete within the attempt's timeout of {self.seconds} s"
        )


class Connection:
    """Where an OpenAI-compatible server is and how to reach it.

    Arguments left out are read from OPENAI_BASE_URL and OPENAI_API_KEY. The sync client is
    made on first use and kept. Async clients are made per event loop, since their pooled
    connections belong to the loop that opened them: one, and one more for each
    `_REQUESTS_PER_ASYNC_CLIENT` requests in flight at once (`leased_client`).
    """

    def __init__(self, base_url: str | None, api_key: str | None, timeout: float) -> None:
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        remember_key(self._api_key)  # masked in every log and trace, not only in our errors
        if self._api_key is None and self.base_url is None:
            raise ModelConfigError(
                "no API key and no base URL: pass api_key= or base_url=, or set "
                "OPENAI_API_KEY or OPENAI_BASE_URL (a local server needs only the base URL)"
            )
        self.timeout = timeout
        self._client: openai.OpenAI | None = None
        self._lock = threading.Lock()
        self._async_clients: list[openai.AsyncOpenAI] = []
        self._in_flight: list[int] = []  # requests on each of them
        self._async_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Clients, their pools and the lock belong to this process: a copy makes its own.
        state = dict(self.__dict__)
        for name in ("_client", "_async_clients", "_in_flight", "_async_loop", "_lock"):
            del state[name]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        remember_key(self._api_key)  # in the process the copy lands in
        self._client = self._async_loop = None
        self._async_clients, self._in_flight = [], []
        self._lock = threading.Lock()

    @property
    def masked_key(self) -> str | None:
        """The key as a repr may show it; None when there is none."""
        return mask_key(self._api_key) if self._api_key else None

    def redact(self, text: str) -> str:
        return redact(text, self._api_key)

    def client(self) -> openai.OpenAI:
        if self._client is None:
            with self._lock:  # threads sharing one model share one client, and its pool
                return self._locked_client()
        return self._client

    def _locked_client(self) -> openai.OpenAI:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(**self._client_options())
        return self._client

    @asynccontextmanager
    async def leased_client(self) -> AsyncIterator[openai.AsyncOpenAI]:
        """An async client of the running loop for one request (or one stream): the first
        with fewer than `_REQUESTS_PER_ASYNC_CLIENT` requests in flight, or a new one."""
        clients = await self._loop_clients()
        in_flight = self._in_flight
        index = next(
            (i for i, count in enumerate(in_flight) if count < _REQUESTS_PER_ASYNC_CLIENT),
            len(clients),
        )
        if index == len(clients):
            import openai

            clients.append(openai.AsyncOpenAI(**self._client_options()))
            in_flight.append(0)
        in_flight[index] += 1
        try:
            yield clients[index]
        finally:
            in_flight[index] -= 1

    async def _loop_clients(self) -> list[openai.AsyncOpenAI]:
        """The async clients of the running loop; those of an earlier loop are let go."""
        import asyncio  # here, not at the top: importing chainkit.llms loads no asyncio

        loop = asyncio.get_running_loop()
        clients, client_loop = self._async_clients, self._async_loop
        if client_loop is not None and client_loop() is loop:
            return clients
        self._async_clients, self._in_flight = [], []
        self._async_loop = weakref.ref(loop)
        for client in clients:
            await _discard(client, client_loop() if client_loop is not None else None)
        return self._async_clients

    def _client_options(self) -> dict[str, Any]:
        # Retries are ours (tenacity), so the SDK makes exactly one attempt per call.
        return {
            "api_key": self._api_key or KEYLESS,
            "base_url": self.base_url,
            "timeout": self.timeout,
            "max_retries": 0,
        }

    def close(self) -> None:
        """Closes the sync client's connections; a later call opens new ones."""
        if self._client is not None:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        """Closes the async client's connections, if they belong to the running loop."""
        import asyncio

        clients, loop = self._async_clients, self._async_loop
        self._async_clients, self._in_flight, self._async_loop = [], [], None
        if loop is not None and loop() is asyncio.get_running_loop():
            for client in clients:
                await client.close()

    def deadline(self, timeout: float | None) -> Deadline:
        """The deadline of an attempt starting now: `timeout` seconds (the attempt's own, if
        it has one) or the connection's."""
        return Deadline(self.timeout if timeout is None else timeout)

    def run(self, attempt: Callable[[], T], timeout: float | None = None) -> T:
        """Runs one attempt, raising the SDK's errors as chainkit's, key masked; `timeout` is
        the attempt's own, if it has one.

        The error is raised after the except block, so that neither its __cause__ nor its
        __context__ holds the SDK's exception: that one's text may quote the key, and its
        request carries it.
        """
        try:
            return attempt()
        except Exception as error:
            failure = self._translated(error, timeout)
            if failure is None:
                raise
        raise failure

    async def arun(self, attempt: Callable[[], Awaitable[T]], timeout: float | None = None) -> T:
        """Async twin of `run`, which also ends the attempt when its timeout has passed
        (`Deadline`), however the server keeps it going."""
        import asyncio

        deadline = self.deadline(timeout)
        try:
            async with asyncio.timeout(deadline.seconds) as bound:
                return await attempt()
        except TimeoutError:
            if not bound.expired():
                raise
            failure: ModelError = deadline.passed()
        except Exception as error:
            translated = self._translated(error, timeout)
            if translated is None:
                raise
            failure = translated
        raise failure

    def _translated(self, error: Exception, timeout: float | None) -> ModelError | None:
        """chainkit's error for an error of the SDK or its HTTP library; None for any other."""
        import openai

        seconds = self.timeout if timeout is None else timeout
        if isinstance(error, openai.APIStatusError):
            return ModelStatusError(
                error.status_code,
                self.redact(_server_message(error)),
                url=self.redact(f"{error.request.method} {error.request.url}"),
                retry_after=retry_after_seconds(error.response.headers),
            )
        if isinstance(error, openai.APITimeoutError):
            url = self.redact(str(error.request.url))
            return ModelTimeoutError(f"{url} did not answer within {seconds} s")
        if isinstance(error, openai.APIConnectionError):
            url, cause = self.redact(str(error.request.url)), self.redact(_root_cause(error))
            return ModelConnectionError(f"the connection to {url} failed: {cause}")
        # Raised while a streamed body is read: the SDK wraps only the request itself.
        if isinstance(error, _http_errors("TimeoutException")):
            text = self.redact(str(error))
            return ModelTimeoutError(f"the stream stalled for more than {seconds} s: {text}")
        if isinstance(error, _http_errors("TransportError")):
            text = self.redact(str(error))
            return ModelConnectionError(f"the connection broke while reading the stream: {text}")
        if isinstance(error, _http_errors("DecodingError")):
            text = self.redact(str(error))
            return ModelResponseError(f"the stream's Content-Encoding could not be decoded: {text}")
        if isinstance(error, UnicodeEncodeError):
            # The SDK encodes the request as UTF-8, which a lone surrogate cannot be.
            text = error.object[error.start : error.end]
            return ModelRequestError(
                f"the request holds {text!r}, which is not valid Unicode text (a lone "
                "surrogate) and cannot be sent as UTF-8: fix the message that holds it"
            )
        if isinstance(error, openai.APIError):
            text = self.redact(error.message)
            return ModelResponseError(f"the server reported an error in its reply: {text}")
        return None


def _http_errors(name: str) -> tuple[type[Exception], ...]:
    """The exception class `name` of the HTTP library the openai package runs on (httpx, or
    httpx2 in newer releases), whichever it has loaded."""
    found = (getattr(sys.modules.get(module), name, None) for module in ("httpx2", "httpx"))
    return tuple(cls for cls in found if isinstance(cls, type) and issubclass(cls, Exception))


async def _discard(client: openai.AsyncOpenAI, loop: asyncio.AbstractEventLoop | None) -> None:
    """Lets go of a client made in another event loop. If that loop has ended, the client is
    marked closed first: left open, the SDK would try to close it when collected, on whatever
    loop runs then, and log the failure. (Closing its connections fails, as they belong to the
    ended loop; their sockets are freed with the client.)"""
    if loop is None or loop.is_closed():
        with suppress(RuntimeError):
            await client.close()


def _server_message(error: openai.APIStatusError) -> str:
    body = error.body  # the "error" object of a JSON error body, or the body's text
    if isinstance(body, Mapping):
        message = body.get("message") or body.get("detail") or body.get("error")
        if message:
            return shorten(str(message), _SERVER_MESSAGE)
    if isinstance(body, str) and body:
        return shorten(body, _SERVER_MESSAGE)
    return "(no message in the reply)"


def _root_cause(error: BaseException) -> str:
    while error.__cause__ is not None:
        error = error.__cause__
    return f"{type(error).__name__}: {error}"
