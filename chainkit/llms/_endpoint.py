"""What every class backed by an OpenAI-compatible server shares: where the server is, how
calls are retried, and the lifecycle of the clients."""

from __future__ import annotations

from typing import Self
from urllib.parse import urlsplit, urlunsplit

from chainkit.llms._openai_wire import Connection
from chainkit.llms._retry import Backoff, RetryPolicy


class OpenAIEndpoint:
    """Holds the connection and the retry policy; `model` names what is asked for."""

    model: str

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        max_attempts: int,
        backoff: Backoff | None,
    ) -> None:
        self.retry_policy = RetryPolicy(max_attempts, backoff or Backoff())
        self._connection = Connection(base_url, api_key, timeout)

    @property
    def base_url(self) -> str | None:
        return self._connection.base_url

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
