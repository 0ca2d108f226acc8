"""What a server is set to: who may call it, how much a caller may send and run, and how long
runs in flight get at shutdown. Checked when made, so a server never starts misconfigured."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from chainkit.serving.errors import ServeConfigError

MEBIBYTE = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """A server's settings (`chainkit serve` makes them from its options).

    - `token`: the bearer token every request must carry (`Authorization: Bearer …`),
      compared in constant time and never logged or shown; None only with `no_auth`.
    - `no_auth`: serve without a token (the command line allows it on a loopback host only).
    - `max_body_bytes`: a request body over it is answered 413 before it is read whole.
    - `max_runs_per_client`: runs one client (its token, else its address) may have in
      flight; one more is answered 429 with Retry-After.
    - `requests_per_minute`: runs one client may start a minute (None: no such limit); one
      more is answered 429 with Retry-After, the seconds until its next start.
    - `cors_origins`: origins a browser may call from (none by default: CORS off).
    - `grace_seconds`: at shutdown, how long runs in flight get to finish.
    - `keepalive_seconds`: a stream quiet this long gets a comment line (`: ping`), so
      proxies do not cut it while a step runs.
    - `write_timeout_seconds`: a stream whose client has read nothing this long (its buffers
      full) is ended and its run cancelled.
    - `body_timeout_seconds`: a request body not all sent within it is answered 408 and its
      connection closed (a client sending a byte at a time holds no run and little memory).
    - `head_timeout_seconds`: a connection with no request in flight is closed when no whole
      request head came within it of opening or of the last response.
    - `max_connections`: connections at once; past it uvicorn answers 503.
    - `traces_kept`: how many of its last runs' traces a server process keeps in memory for
      their trace page (`GET /runs/{run_id}/trace`), each at most 2,000 events; 0 keeps
      none, and records nothing.
    """

    token: str | None = field(default=None, repr=False)
    no_auth: bool = False
    max_body_bytes: int = MEBIBYTE
    max_runs_per_client: int = 16
    cors_origins: tuple[str, ...] = ()
    grace_seconds: float = 30.0
    requests_per_minute: float | None = None
    keepalive_seconds: float = 15.0
    write_timeout_seconds: float = 30.0
    body_timeout_seconds: float = 30.0
    head_timeout_seconds: float = 10.0
    max_connections: int = 4096
    traces_kept: int = 64

    def __post_init__(self) -> None:
        if self.token is None and not self.no_auth:
            raise ServeConfigError(
                "a server needs a token (token=..., or CHAINKIT_SERVE_TOKEN for chainkit "
                "serve); to serve without one, say so with no_auth=True"
            )
        if self.token is not None and (not isinstance(self.token, str) or not self.token):
            raise ServeConfigError("token must be a non-empty str")
        _check_positive("max_body_bytes", self.max_body_bytes)
        _check_positive("max_runs_per_client", self.max_runs_per_client)
        _check_seconds("grace_seconds", self.grace_seconds, least=0.0)
        _check_seconds("keepalive_seconds", self.keepalive_seconds)
        _check_seconds("write_timeout_seconds", self.write_timeout_seconds)
        if self.requests_per_minute is not None:
            _check_seconds("requests_per_minute", self.requests_per_minute)
        if not isinstance(self.cors_origins, tuple) or not all(
            isinstance(origin, str) and origin for origin in self.cors_origins
        ):
            raise ServeConfigError(
                "cors_origins must be a tuple of origins such as ('https://app.example',), got "
                f"{self.cors_origins!r:.80}"
            )
        _check_seconds("body_timeout_seconds", self.body_timeout_seconds)
        _check_seconds("head_timeout_seconds", self.head_timeout_seconds)
        _check_positive("max_connections", self.max_connections)
        if _not_count(self.traces_kept):
            raise ServeConfigError(
                f"traces_kept must be an int, 0 or more, got {self.traces_kept!r}"
            )


def _check_positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ServeConfigError(f"{name} must be a positive int, got {value!r}")


def _check_seconds(name: str, value: object, least: float | None = None) -> None:
    """A finite number above 0, or of at least `least` when given."""
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (value > 0 or (least is not None and value >= least))
    ):
        return
    bound = "more than 0" if least is None else f"{least:g} or more"
    raise ServeConfigError(f"{name} must be a number {bound}, got {value!r}")


def _not_count(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int) or value < 0
