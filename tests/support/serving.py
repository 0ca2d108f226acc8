"""A chainkit app served for real: uvicorn on 127.0.0.1 with a free port, in a thread of the
test process, stopped (and its lifespan's shutdown run) when the block ends."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tests.support.extras import need_extra

START_SECONDS = 30.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def served(app: Any, **config: Any) -> Iterator[str]:
    """`app` served over HTTP while the block runs; its base URL."""
    need_extra("uvicorn", "serve")
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **config)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(START_SECONDS)


@dataclass
class Answer:
    """A response as a test reads it."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    base_url: str,
    method: str,
    path: str,
    body: bytes | Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> Answer:
    """One request over a fresh connection (stdlib http.client: no client library between the
    test and the wire); `body` bytes as they are, anything else as JSON."""
    url = urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=timeout)
    try:
        sent_headers = dict(headers or {})
        if body is not None and not isinstance(body, bytes):
            body = json.dumps(body).encode()
            sent_headers.setdefault("Content-Type", "application/json")
        connection.request(method, path, body=body, headers=sent_headers)
        response = connection.getresponse()
        return Answer(
            response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        )
    finally:
        connection.close()


def sse_events(body: bytes) -> list[tuple[str, Any]]:
    """A Server-Sent Events body as (event name, JSON data) pairs, in order."""
    events = []
    for frame in body.decode().split("\n\n"):
        if not frame.strip() or frame.startswith(":"):
            continue
        fields = dict(line.split(": ", 1) for line in frame.split("\n") if ": " in line)
        events.append((fields.get("event", "message"), json.loads(fields["data"])))
    return events
