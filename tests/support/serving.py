"""A chainkit app served for real: uvicorn on 127.0.0.1 with a free port, in a thread of the
test process, stopped (and its lifespan's shutdown run) when the block ends."""

from __future__ import annotations

import http.client
import json
import re
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


@dataclass
class Running:
    """A server running in a thread of the test process."""

    url: str
    server: Any  # a uvicorn.Server
    thread: threading.Thread

    def shut_down(self) -> None:
        """Starts the server's shutdown, as SIGTERM does, and returns at once."""
        self.server.should_exit = True

    def stopped(self, timeout: float = START_SECONDS) -> bool:
        """Whether the server has stopped within `timeout` seconds."""
        self.thread.join(timeout)
        return not self.thread.is_alive()


@contextmanager
def running(app: Any, **config: Any) -> Iterator[Running]:
    """`app` (made by serving.create_app) served over HTTP by `serving.http_server` while the
    block runs, shut down after it."""
    need_extra("uvicorn", "serve")
    from chainkit.serving import http_server

    port = free_port()
    server = http_server(app, host="127.0.0.1", port=port, log_level="warning", **config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield Running(f"http://127.0.0.1:{port}", server, thread)
    finally:
        server.should_exit = True
        thread.join(START_SECONDS)


@contextmanager
def served(app: Any, **config: Any) -> Iterator[str]:
    """`app` served over HTTP while the block runs; its base URL."""
    with running(app, **config) as server:
        yield server.url


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


class RawStream:
    """A request on a socket of its own, read (or not) as the test chooses: to leave in the
    middle of a stream, or to never read it."""

    def __init__(
        self,
        base_url: str,
        path: str,
        body: Any,
        headers: dict[str, str],
        receive_buffer: int | None = None,
        timeout: float = 30.0,
    ) -> None:
        url = urlsplit(base_url)
        self.socket = socket.socket()
        if receive_buffer is not None:  # set before connecting: the window it offers
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.socket.settimeout(timeout)
        self.socket.connect((url.hostname or "127.0.0.1", url.port or 80))
        data = json.dumps(body).encode()
        head = [f"POST {path} HTTP/1.1", f"Host: {url.netloc}", "Content-Type: application/json"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        head.append(f"Content-Length: {len(data)}")
        self.socket.sendall("\r\n".join(head).encode() + b"\r\n\r\n" + data)
        self.received = b""

    def read_until(self, marker: bytes | re.Pattern[bytes]) -> bytes:
        """What has come so far, once it holds `marker` (or a match of it: a pattern);
        socket.timeout past the timeout."""
        pattern = marker if isinstance(marker, re.Pattern) else re.compile(re.escape(marker))
        while not pattern.search(self.received):
            chunk = self.socket.recv(65536)
            if not chunk:
                raise ConnectionError(f"closed before {marker!r}: {self.received[-300:]!r}")
            self.received += chunk
        return self.received

    def close(self) -> None:
        self.socket.close()
