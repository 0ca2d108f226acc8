"""The served app against hostile clients, over raw sockets: oversized and endless request
heads, slow bodies, bodies cut short, connections opened and dropped, ids built to inject
headers or climb paths, JSON built to break the parser. Each answer is a named 4xx or a closed
connection: never a hang, a traceback or a server that stops answering."""

from __future__ import annotations

import json
import logging
import os
import socket
import struct
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from chainkit import chains
from chainkit._cli.agent import builtin_agent
from chainkit.serving import ServerSettings, create_app
from chainkit.serving.errors import ServeConfigError
from tests.support.held_chains import HeldChain
from tests.support.serving import call, served
from tests.support.stub_chains import WaitsForever

TOKEN = "t0ken-for-hostile-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
AS_JSON = AUTH | {"Content-Type": "application/json"}
SHORT = 1.0
"""The body and head timeouts the tests serve with, in seconds."""
PATIENCE = 20.0
"""How long a test waits for what must happen within SHORT: generous, so load cannot fail it."""


def settings(**changes: Any) -> ServerSettings:
    fields: dict[str, Any] = {
        "token": TOKEN,
        "body_timeout_seconds": SHORT,
        "head_timeout_seconds": SHORT,
    }
    return ServerSettings(**(fields | changes))


@pytest.fixture
def base_url() -> Iterator[str]:
    served_with = settings()
    with served(create_app(builtin_agent(), served_with)) as url:
        yield url


def connect(base_url: str) -> socket.socket:
    host, port = base_url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=PATIENCE)
    return connection


def head(path: str, *lines: str, length: int | None = None, method: str = "POST") -> bytes:
    fields = [f"{method} {path} HTTP/1.1", "Host: test", f"Authorization: Bearer {TOKEN}"]
    if length is not None:
        fields += ["Content-Type: application/json", f"Content-Length: {length}"]
    return ("\r\n".join([*fields, *lines]) + "\r\n\r\n").encode()


def answer_to(connection: socket.socket) -> bytes:
    """All the server sends until it closes the connection (b"" when it closed without a
    word); fails the test when it neither answers nor closes within PATIENCE."""
    received = b""
    connection.settimeout(PATIENCE)
    try:
        while chunk := connection.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        pytest.fail(f"the server held the connection open; it sent {received[:200]!r}")
    return received


def status_of(response: bytes) -> int | None:
    return int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/1.1 ") else None


def still_serving(base_url: str) -> None:
    assert call(base_url, "GET", "/health", headers=AUTH, timeout=PATIENCE).status == 200


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param([f"X-Big: {'a' * 100_000}"], id="a 100 KB header"),
        pytest.param([f"X-N{i}: v" for i in range(10_000)], id="10,000 headers"),
    ],
)
def test_an_oversized_request_head_is_refused_and_closed(base_url: str, lines: list[str]) -> None:
    with connect(base_url) as connection:
        connection.sendall(head("/health", *lines, method="GET"))
        response = answer_to(connection)
    assert status_of(response) in (None, 400, 431), response[:200]
    still_serving(base_url)


@pytest.mark.parametrize("piece", [1000, 4093, 65536])
def test_a_head_under_the_limit_is_served_however_it_is_split(base_url: str, piece: int) -> None:
    from chainkit.serving._uvicorn import MAX_HEAD_BYTES

    near_limit = head("/health", f"X-Big: {'a' * (MAX_HEAD_BYTES - 200)}", method="GET")
    over_limit = head("/health", f"X-Big: {'a' * MAX_HEAD_BYTES}", method="GET")
    for whole, status in ((near_limit, 200), (over_limit, 431)):
        with connect(base_url) as connection:
            for start in range(0, len(whole), piece):
                connection.sendall(whole[start : start + piece])
            if status == 200:  # then a last request, after which the server closes
                connection.sendall(head("/health", "Connection: close", method="GET"))
            assert status_of(answer_to(connection)) == status


def test_a_request_head_sent_a_byte_at_a_time_is_cut_off(base_url: str) -> None:
    with connect(base_url) as connection:
        connection.sendall(b"POST /invoke HTTP/1.1\r\nHost: test\r\nX-Slow: ")
        started = time.monotonic()
        try:
            while time.monotonic() - started < PATIENCE:
                connection.sendall(b"a")
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass
        else:
            pytest.fail("the server was still reading a request head after PATIENCE")
    still_serving(base_url)


def test_a_request_framed_both_by_length_and_by_chunks_is_the_connections_last(
    base_url: str,
) -> None:
    smuggled = head("/health", "Connection: close", method="GET")
    with connect(base_url) as connection:
        connection.sendall(
            head("/invoke", "Transfer-Encoding: chunked", length=4 + len(smuggled))
            + b"0\r\n\r\n"
            + smuggled
        )
        response = answer_to(connection)
    assert response.count(b"HTTP/1.1 ") == 1, response[:600]
    assert b'"status":"ok"' not in response


def test_a_connection_that_sends_nothing_is_closed(base_url: str) -> None:
    with connect(base_url) as connection:
        assert answer_to(connection) == b""


def test_a_body_sent_a_byte_at_a_time_gets_408_and_holds_no_run() -> None:
    chain = HeldChain()
    served_with = settings(max_runs_per_client=1)
    with served(create_app(chain, served_with)) as url:
        with connect(url) as connection:
            connection.sendall(head("/invoke", length=1000) + b'{"input": "')
            # Meanwhile the client's one run place is free: a whole request is admitted.
            chain.release.set()
            assert call(url, "POST", "/invoke", {"input": "x"}, AUTH).status == 200
            try:
                for _ in range(int(PATIENCE / 0.05)):
                    connection.sendall(b"a")
                    time.sleep(0.05)
            except (BrokenPipeError, ConnectionResetError):
                pass
            response = answer_to(connection)
        assert status_of(response) == 408, response[:300]
        assert b'"code":"body_timeout"' in response
        assert b"connection: close" in response.lower()


SERVER_LOGGERS = ("chainkit", "uvicorn")


def test_a_body_cut_short_runs_nothing_and_logs_no_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chain = HeldChain()
    served_with = settings()
    with served(create_app(chain, served_with)) as url:
        with caplog.at_level(logging.WARNING), connect(url) as connection:
            connection.sendall(head("/invoke", length=1000) + b'{"input": "short"}')
            connection.shutdown(socket.SHUT_WR)
            answer_to(connection)
        chain.release.set()
        still_serving(url)
    assert not chain.started.is_set(), "a run started on a body cut short"
    errors = [
        f"{record.name}: {record.getMessage()} {record.exc_info and record.exc_info[1]!r}"
        for record in caplog.records
        # The server's loggers only: asyncio's would also report a client another test
        # left to the garbage collector ("Task exception was never retrieved").
        if record.levelno >= logging.ERROR and record.name.partition(".")[0] in SERVER_LOGGERS
    ]
    assert errors == []


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts fds in /proc")
def test_connections_opened_and_dropped_leave_nothing_open(base_url: str) -> None:
    still_serving(base_url)
    before = _open_fds()
    for number in range(300):
        connection = connect(base_url)
        if number % 3 == 1:
            connection.sendall(head("/invoke", length=100) + b'{"inp')
        elif number % 3 == 2:  # closed with a reset, not a FIN
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        connection.close()
    still_serving(base_url)
    deadline = time.monotonic() + PATIENCE
    while _open_fds() > before + 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _open_fds() <= before + 5


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", id="nesting 1e5"),
        pytest.param(b'{"input": 1e999999}', id="a number out of range"),
        pytest.param(b'{"input": ' + b"1" * 100_000 + b"}", id="an integer of 1e5 digits"),
        pytest.param(b'{"input": NaN}', id="NaN"),
        pytest.param(b'{"input": -Infinity}', id="Infinity"),
        pytest.param(b'{"input": "\xff\xfe"}', id="invalid UTF-8"),
        pytest.param(b'{"input": "\\ud800"}', id="a lone surrogate"),
    ],
)
@pytest.mark.parametrize("route", ["/invoke", "/stream"])
def test_json_built_to_break_the_parser_gets_a_named_400(
    base_url: str, route: str, body: bytes
) -> None:
    answer = call(base_url, "POST", route, body, AS_JSON)
    assert answer.status == 400, answer.text[:300]
    assert answer.json()["error"]["code"] == "invalid_json"
    assert "Traceback" not in answer.text


def test_a_pair_of_surrogate_escapes_is_text(base_url: str) -> None:
    answer = call(base_url, "POST", "/invoke", b'{"input": "\\ud83d\\ude00"}', AS_JSON)
    assert answer.status == 200, answer.text


@pytest.mark.parametrize(
    "run_id",
    ["a\r\nX-Evil: 1", "a\nX-Evil: 1", "a\u2028b", "caf\u00e9", "a\x00b", "a\\r\\nX-Evil"],
)
def test_a_run_id_never_reaches_a_response_header(base_url: str, run_id: str) -> None:
    answer = call(base_url, "POST", "/stream", {"input": "hi", "run_id": run_id}, AUTH)
    assert answer.status == 422
    assert "x-evil" not in answer.headers and "x-run-id" not in answer.headers


RUN_PATHS = [
    "/runs/..",
    "/runs/%2e%2e",
    "/runs/..%2f..%2fetc%2fpasswd",
    "/runs/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/runs/a%2fb",
    "/runs/a%5cb",
    "/runs/a%0d%0aX-Evil:%201",
    "/runs/caf%c3%a9",
    "/runs/a%00b",
    "/runs/" + "x" * 200,
]


@pytest.mark.parametrize("path", RUN_PATHS)
def test_an_id_in_a_path_cannot_climb_or_inject(base_url: str, path: str) -> None:
    app = create_app(builtin_agent(), settings())
    if not any(getattr(route, "path", "").startswith("/runs") for route in app.routes):
        pytest.skip("this app has no /runs routes")
    with connect(base_url) as connection:
        connection.sendall(head(path, "Connection: close", method="GET"))
        response = answer_to(connection)
    head_part, _, body = response.partition(b"\r\n\r\n")
    assert status_of(response) in (400, 404, 422), response[:300]
    assert b"x-evil" not in head_part.lower()
    assert b"root:" not in body and b"Traceback" not in body


def test_chains_run_as_before_the_hostile_pass(base_url: str) -> None:
    """The settings that bound hostile clients leave a plain run alone."""
    answer = call(base_url, "POST", "/invoke", {"input": "what is 6 * 7?"}, AUTH)
    assert answer.json()["outputs"] == chains.call(builtin_agent(), {"input": "what is 6 * 7?"})


@pytest.mark.parametrize("name", ["body_timeout_seconds", "head_timeout_seconds"])
@pytest.mark.parametrize("value", [0, -1, float("inf"), float("nan"), True, "30"])
def test_a_timeout_must_be_seconds_above_zero(name: str, value: object) -> None:
    with pytest.raises(ServeConfigError, match=name):
        settings(**{name: value})


@pytest.mark.parametrize("value", [0, 1.5, True])
def test_max_connections_must_be_a_positive_int(value: object) -> None:
    with pytest.raises(ServeConfigError, match="max_connections"):
        settings(max_connections=value)


IDLE_STREAMS = 200
IDLE_BOUND = 256 * 1024
"""Bytes of Python objects an idle stream may hold in the server (bench/bench_serve.py
measures about 35 KB of resident memory a stream): generous, so that only a leak of a
different size, such as a stream's events kept whole, fails it."""


def test_idle_streams_hold_a_bounded_share_of_memory() -> None:
    served_with = settings(max_runs_per_client=IDLE_STREAMS, grace_seconds=0.5)
    with served(create_app(WaitsForever(), served_with)) as url:
        opened: list[socket.socket] = []
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(IDLE_STREAMS):
                connection = connect(url)
                opened.append(connection)
                body = json.dumps({"input": "wait"}).encode()
                connection.sendall(head("/stream", length=len(body)) + body)
                first_event(connection)
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
            for connection in opened:
                connection.close()
    assert held / IDLE_STREAMS < IDLE_BOUND, f"{held / IDLE_STREAMS / 1024:.0f} KB a stream"


def first_event(connection: socket.socket) -> None:
    received = b""
    while b"event: chain_start" not in received:
        chunk = connection.recv(65536)
        assert chunk, f"the stream ended before its first event: {received[:300]!r}"
        received += chunk
