"""Each client's runs kept under `requests_per_minute`: a rate bucket per client (the one the
models' rate limiter keeps, `llms.rate_limit.LocalBucket`), asked for a start now; a client
that would have to wait is refused 429 with the wait as Retry-After instead."""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

from chainkit.llms.rate_limit import LocalBucket
from chainkit.serving._problems import Problem

MOST_CLIENTS = 10_000
"""Clients whose buckets are kept; the one seen least recently is forgotten past it (its pace
starts afresh), so many addresses cannot grow the table without bound."""


class ClientPace:
    """The starts of each client, `requests_per_minute` at most (None: no limit)."""

    def __init__(
        self, requests_per_minute: float | None, clock: Callable[[], int] = time.monotonic_ns
    ) -> None:
        self.requests_per_minute = requests_per_minute
        self._clock = clock
        self._buckets: OrderedDict[str, LocalBucket] = OrderedDict()

    def start(self, client: str) -> None:
        """Counts a start of `client`'s now; 429 with Retry-After when its pace has no room."""
        if self.requests_per_minute is None:
            return
        bucket = self._bucket(client)
        wait, ticket = bucket.reserve(0)
        if wait > 0:
            bucket.cancel(ticket)  # a refused run takes no place from the client's next one
            seconds = math.ceil(wait)
            raise Problem(
                429,
                "rate_limited",
                f"this client's runs are limited to {self.requests_per_minute:g} a minute; "
                f"try again in {seconds} s",
                headers={"Retry-After": str(seconds)},
            )

    def _bucket(self, client: str) -> LocalBucket:
        bucket = self._buckets.get(client)
        if bucket is None:
            bucket = LocalBucket(self.requests_per_minute, None, self._clock)
            self._buckets[client] = bucket
            if len(self._buckets) > MOST_CLIENTS:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(client)
        return bucket
