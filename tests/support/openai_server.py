"""A loopback OpenAI-compatible server for tests: scripted replies, recorded requests, faults.

Stdlib only. It serves POST /v1/chat/completions (plain JSON, or SSE when the request asks for
`stream`) and POST /v1/embeddings on 127.0.0.1 with a free port. A test pushes `Reply`s (what
the model says), `Raw` replies (any bytes at all, sent as they are) and `Fault`s (what goes
wrong); each request first takes the next queued fault, if any, and otherwise the next
reply. Faults that show part of a reply (a cut-off or stalled stream) only peek at it, so the
retried request gets the whole reply. Every request is recorded, faulted or not, so a test
can count attempts and read what was sent (`response_format`, `tools` and `tool_choice`
among the body's fields: see `Recorded.body`). A reply may be JSON (`Reply.of_json`), tool
calls (`Call`) or a refusal (`Reply.refusal`).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, cast
from urllib.parse import parse_qsl

DEFAULT_USAGE: dict[str, Any] = {
    "prompt_tokens": 11,
    "completion_tokens": 7,
    "total_tokens": 18,
    "completion_tokens_details": {"reasoning_tokens": 3},
    "prompt_tokens_details": {"cached_tokens": 2},
}
UNAUTHORIZED_MESSAGE = "Incorrect API key provided: {api_key}"
"""The 401 body echoes the key it got, as careless servers do, so tests can prove it is masked."""
TEST_API_KEY = "sk-loopback-0123456789abcdefXYZ"
"""The key tests give their clients: key-shaped, so it shows whether masking works."""
LATE_REPLY = "too late: the client gave up before this was sent"
_RESUME_TIMEOUT = 5.0
_THREAD_PREFIX = "openai-server"


@dataclass(slots=True)
class Call:
    """A tool call in a scripted reply; `id` defaults to call_<position>."""

    name: str
    arguments: str
    id: str = ""


ToolCallIndex = Literal["position", "zero", "omitted"]
"""How a stream numbers its tool-call deltas: by the call's position (as OpenAI does), every
call at index 0 (a server bug seen with parallel calls), or not at all."""


@dataclass(slots=True)
class Reply:
    """What the model says to one chat request.

    `finish_reason` defaults to "tool_calls" when there are tool calls, else "stop"; with
    `sends_finish_reason=False` there is none (null in a plain reply, no final chunk in a
    stream). Streams split content, reasoning and tool-call arguments into pieces of
    `chunk_size` characters; with `tool_calls_in_one_chunk` every call comes whole in a single
    chunk instead, and `tool_call_index` says how the tool-call deltas are numbered.
    With `pause_after`, the stream stops after that many content pieces until the test sets
    `OpenAIServer.resume`, which proves the client hands text over as it arrives. The reply
    names the model the request asked for, unless `model` names another (as a server does
    for a model alias), and has the id `id`.
    """

    content: str = ""
    tool_calls: list[Call] = field(default_factory=list)
    reasoning_content: str | None = None
    finish_reason: str | None = None
    sends_finish_reason: bool = True
    usage: dict[str, Any] | None = field(default_factory=lambda: dict(DEFAULT_USAGE))
    chunk_size: int = 4
    tool_calls_in_one_chunk: bool = False
    tool_call_index: ToolCallIndex = "position"
    pause_after: int | None = None
    model: str | None = None
    id: str = "chatcmpl-loopback"
    refusal: str | None = None
    """The model's refusal (OpenAI's `refusal` field), streamed in pieces like content."""

    @classmethod
    def of_json(cls, value: Any, **fields: Any) -> Reply:
        """A reply whose content is `value` as JSON text (what a server that honours
        `response_format` sends)."""
        return cls(json.dumps(value), **fields)


@dataclass(slots=True)
class Raw:
    """A reply sent as exactly these bytes, status line and headers included, whatever the
    request asked for; the server then closes the connection. Build it with `raw_reply`."""

    data: bytes


def raw_reply(
    body: bytes,
    content_type: str = "text/event-stream",
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> Raw:
    """`body` after an HTTP/1.1 head of `status` and `content_type`; the body ends where the
    server closes the connection (no Content-Length, no chunked framing), so it may be any
    bytes at all."""
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", f"Content-Type: {content_type}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    lines.append("Connection: close")
    return Raw("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body)


FaultKind = Literal["status", "drop", "slow", "cut", "truncate", "stall", "pings", "malformed"]
_PARTIAL_KINDS = ("cut", "truncate", "stall", "pings")
"""Faults that send part of a reply before going wrong."""


@dataclass(slots=True)
class Fault:
    """One request that goes wrong; build it with the class methods."""

    kind: FaultKind
    status: int = 0
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    after_chunks: int = 0
    reply: Reply | None = None
    every: float = 0.0

    @classmethod
    def http(
        cls, status: int, message: str | None = None, headers: dict[str, str] | None = None
    ) -> Fault:
        """An error status with an OpenAI-style JSON error body."""
        if message is None:
            message = UNAUTHORIZED_MESSAGE if status == 401 else f"loopback fault {status}"
        return cls("status", status=status, message=message, headers=dict(headers or {}))

    @classmethod
    def drop(cls) -> Fault:
        """Reads the request, then closes the connection without a response."""
        return cls("drop")

    @classmethod
    def slow(cls, seconds: float) -> Fault:
        """Answers only after `seconds` (with LATE_REPLY, leaving the reply queue alone)."""
        return cls("slow", seconds=seconds)

    @classmethod
    def cut(cls, after_chunks: int = 2, reply: Reply | None = None) -> Fault:
        """Sends the first `after_chunks` stream events (half the body when not streaming),
        then closes the connection. They are those of `reply` if given, else of the next
        queued reply, which stays queued for the retry."""
        return cls("cut", after_chunks=after_chunks, reply=reply)

    @classmethod
    def truncate(cls, after_chunks: int = 2) -> Fault:
        """Like `cut`, but ends the body properly, without [DONE] or a finish_reason: a stream
        a proxy cut short without breaking the connection."""
        return cls("truncate", after_chunks=after_chunks)

    @classmethod
    def stall(cls, after_chunks: int = 2, seconds: float = 5.0) -> Fault:
        """Like `cut`, but first goes silent for `seconds` (or until the server stops), keeping
        the connection open: a stream that stalls partway, past the client's timeout."""
        return cls("stall", after_chunks=after_chunks, seconds=seconds)

    @classmethod
    def pings(cls, after_chunks: int = 2, seconds: float = 30.0, every: float = 0.1) -> Fault:
        """Like `stall`, but keeps a stream alive meanwhile with an SSE comment (`: ping`)
        every `every` seconds, as servers do while a model thinks: no read waits long, yet
        the reply never comes. A plain request gets a line break of JSON whitespace instead,
        before any of its body."""
        return cls("pings", after_chunks=after_chunks, seconds=seconds, every=every)

    @classmethod
    def malformed(cls) -> Fault:
        """Answers 200 with a body (or, streaming, an event) that is not valid JSON."""
        return cls("malformed")


@dataclass(slots=True)
class Recorded:
    """One request as received: `path` without the query string, which is parsed into
    `query`; header names are lower-case. Requests that share a `client_port` came over the
    same (kept-alive) connection. `at` is when its head arrived, on `time.monotonic()`."""

    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    client_port: int
    at: float = 0.0


class OpenAIServer:
    """The server; use as a context manager, or call start() and stop()."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.resume = threading.Event()
        self.resumed: list[bool] = []
        """For each paused stream: whether the test resumed it before the pause timed out."""
        self.replier: Callable[[dict[str, Any]], Reply] | None = None
        """When set, answers each chat request no queued reply is left for, from its body:
        replies that depend on the request, for runs that interleave (a served agent's)."""
        self._replies: deque[Reply | Raw] = deque()
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("OpenAIServer is not running; call start() first")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def push(self, *replies: Reply | Raw | str) -> None:
        """Queues chat replies; a str is a plain text reply."""
        with self._lock:
            self._replies.extend(Reply(r) if isinstance(r, str) else r for r in replies)

    def fail(self, *faults: Fault) -> None:
        """Queues faults, one per coming request."""
        with self._lock:
            self._faults.extend(faults)

    @property
    def pending(self) -> tuple[int, int]:
        """(replies, faults) still queued."""
        with self._lock:
            return len(self._replies), len(self._faults)

    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def start(self) -> OpenAIServer:
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{_THREAD_PREFIX}-main",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving and joins every thread it started, waking any that wait or read."""
        if self._httpd is None or self._thread is None:
            return
        self._stopping.set()
        self.resume.set()
        self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            _shut(connection)
        self._httpd.server_close()
        for thread in self._httpd.handler_threads:
            thread.join()
        self._thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # What the handler threads call.

    def _record(self, request: Recorded) -> Fault | None:
        with self._lock:
            self.requests.append(request)
            return self._faults.popleft() if self._faults else None

    def _next_reply(self, *, consume: bool) -> Reply | Raw | None:
        with self._lock:
            if not self._replies:
                return None
            return self._replies.popleft() if consume else self._replies[0]

    def _track(self, connection: socket.socket, *, open: bool) -> None:
        with self._lock:
            if open:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)


def server_threads() -> list[threading.Thread]:
    """Threads of any OpenAIServer still alive: empty once every server is stopped."""
    return [t for t in threading.enumerate() if t.name.startswith(_THREAD_PREFIX)]


class _HTTPServer(ThreadingHTTPServer):
    # Non-daemon handler threads, joined by OpenAIServer.stop(): nothing outlives it.
    daemon_threads = False
    block_on_close = False
    # Room for many clients connecting at once (a served agent's runs under load) before any
    # is accepted; the default of 5 turns a burst into dropped SYNs and seconds of retries.
    request_queue_size = 1024

    def __init__(self, owner: OpenAIServer) -> None:
        self.owner = owner
        self.handler_threads: list[threading.Thread] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        # ThreadingMixIn's own steps, plus: named threads, so leaks are easy to spot, and the
        # socket tracked before its thread starts, so stop() can always wake that thread.
        self.owner._track(request, open=True)
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f"{_THREAD_PREFIX}-conn-{len(self.handler_threads) + 1}",
        )
        self.handler_threads.append(thread)
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        self.owner._track(request, open=False)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out or go away are part of the tests; stay quiet about them.
        pass


def _shut(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each reply waits on the client's delayed ACK
    timeout = 30  # an idle keep-alive connection is dropped at the latest after this

    @property
    def owner(self) -> OpenAIServer:
        return cast(_HTTPServer, self.server).owner

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        arrived = time.monotonic()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path, _, query = self.path.partition("?")
        headers = {k.lower(): v for k, v in self.headers.items()}
        fault = self.owner._record(
            Recorded(path, dict(parse_qsl(query)), headers, body, self.client_address[1], arrived)
        )
        if not isinstance(body, dict):
            self._send_error(400, "loopback server: the request body is not a JSON object")
        elif path == "/v1/chat/completions":
            self._chat(body, fault)
        elif path == "/v1/embeddings":
            self._embeddings(body, fault)
        else:
            self._send_error(404, f"loopback server: no route for {path}")

    # Replies.

    def _chat(self, body: dict[str, Any], fault: Fault | None) -> None:
        stream = bool(body.get("stream"))
        if fault is not None and fault.kind not in _PARTIAL_KINDS:
            self._fault(fault, stream=stream)
            return
        reply: Reply | Raw | None = fault.reply if fault is not None else None
        reply = reply or self._next_reply(body, consume=fault is None)
        if reply is None:
            return
        if isinstance(reply, Raw):
            self.wfile.write(reply.data)
            self._drop()
            return
        model = str(body.get("model"))
        if not stream:
            data = json.dumps(completion_of(reply, model)).encode()
            if fault is not None and fault.kind == "pings":
                self._send_head(200, "application/json", None)
                self._ping(fault, b"\n")
                self._drop()
                return
            if fault is not None:  # half the body, then the fault's ending
                self._send_head(200, "application/json", len(data))
                self.wfile.write(data[: len(data) // 2])
                self._end_early(fault)
                return
            self._send_bytes(200, data, "application/json")
            return
        options = body.get("stream_options") or {}
        events = stream_events_of(reply, model, bool(options.get("include_usage")))
        self._send_head(200, "text/event-stream", None)
        content_pieces = 0
        for number, (event, is_content) in enumerate(events):
            if fault is not None and number >= fault.after_chunks:
                self._end_early(fault)
                return
            self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
            content_pieces += is_content
            if is_content and content_pieces == reply.pause_after:
                self.owner.resumed.append(self.owner.resume.wait(_RESUME_TIMEOUT))
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _embeddings(self, body: dict[str, Any], fault: Fault | None) -> None:
        if fault is not None:
            self._fault(fault, stream=False)
            return
        if body.get("encoding_format", "float") != "float":
            self._send_error(400, "loopback server: only encoding_format=float is served")
            return
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        # Listed in reverse, as the index says where each belongs: clients must order by it.
        data = [
            {"object": "embedding", "index": i, "embedding": embedding_of(text)}
            for i, text in reversed(list(enumerate(texts)))
        ]
        usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
        reply = {"object": "list", "data": data, "model": body.get("model"), "usage": usage}
        self._send_bytes(200, json.dumps(reply).encode(), "application/json")

    def _next_reply(self, body: dict[str, Any], *, consume: bool) -> Reply | Raw | None:
        reply = self.owner._next_reply(consume=consume)
        if reply is None and self.owner.replier is not None:
            reply = self.owner.replier(body)
        if reply is None:
            self._send_error(400, "loopback server: no scripted reply is queued")
        return reply

    # Faults.

    def _fault(self, fault: Fault, *, stream: bool) -> None:
        if fault.kind == "status":
            message = fault.message.replace("{api_key}", self._bearer())
            self._send_error(fault.status, message, fault.headers)
        elif fault.kind == "drop":
            self._drop()
        elif fault.kind == "slow":
            self.owner._stopping.wait(fault.seconds)
            late = Reply(LATE_REPLY)
            try:
                self._send_bytes(
                    200, json.dumps(completion_of(late, "late")).encode(), "application/json"
                )
            except OSError:
                self.close_connection = True
        elif stream:  # malformed
            self._send_head(200, "text/event-stream", None)
            self._write_chunk(b'data: {"choices": [{"index": 0, "delta": {"content": "tru\n\n')
            self._write_chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            self._send_bytes(
                200, b'{"id": "chatcmpl-broken", "choices": [{"mess', "application/json"
            )

    def _end_early(self, fault: Fault) -> None:
        """Ends a reply partway through its body as a cut, truncate or stall fault says."""
        if fault.kind == "truncate":
            self.wfile.write(b"0\r\n\r\n")  # the chunked body's proper end
            return
        if fault.kind == "stall":
            self.owner._stopping.wait(fault.seconds)
        if fault.kind == "pings":
            self._ping(fault, b": ping\n\n")
        self._drop()

    def _ping(self, fault: Fault, beat: bytes) -> None:
        """Sends `beat` every `fault.every` seconds for `fault.seconds`, until the server stops
        or the client goes away."""
        ends = time.monotonic() + fault.seconds
        while time.monotonic() < ends and not self.owner._stopping.wait(fault.every):
            try:
                self._write_chunk(beat)
            except OSError:
                return

    def _bearer(self) -> str:
        auth = self.headers.get("Authorization") or ""
        return auth.removeprefix("Bearer ")

    # Writing.

    def _send_head(self, status: int, content_type: str, length: int | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    def _send_bytes(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        error = {
            "message": message,
            "type": HTTPStatus(status).phrase.lower().replace(" ", "_"),
            "code": None,
        }
        self._send_bytes(status, json.dumps({"error": error}).encode(), "application/json", headers)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _drop(self) -> None:
        self.close_connection = True
        _shut(self.connection)


EMBEDDING_DIMENSIONS = 256


def embedding_of(text: str) -> list[float]:
    """The loopback server's embedding of `text`: how often each hashed character trigram of
    its lower-cased words occurs (fastText-style subwords, with no model). Deterministic,
    distinct for distinct words, and similar for texts that share words or parts of words,
    typos included ("forcast" and "forecast"), which is what a test of dense retrieval needs."""
    counts = [0.0] * EMBEDDING_DIMENSIONS
    for word in text.lower().split():
        padded = f"<{word}>"
        for start in range(max(len(padded) - 2, 1)):
            counts[zlib.crc32(padded[start : start + 3].encode()) % EMBEDDING_DIMENSIONS] += 1
    return counts


def completion_of(reply: Reply, model: str) -> dict[str, Any]:
    """The chat completion the server sends for `reply`, as JSON data."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.content if reply.content or not reply.tool_calls else None,
        "refusal": reply.refusal,
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
    if reply.reasoning_content is not None:
        message["reasoning_content"] = reply.reasoning_content
    data: dict[str, Any] = {
        "id": reply.id,
        "object": "chat.completion",
        "created": 0,
        "model": reply.model or model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": _finish(reply), "logprobs": None}
        ],
    }
    if reply.usage is not None:
        data["usage"] = reply.usage
    return data


def _finish(reply: Reply) -> str | None:
    if not reply.sends_finish_reason:
        return None
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def stream_events_of(
    reply: Reply, model: str, include_usage: bool
) -> Iterator[tuple[dict[str, Any], bool]]:
    """The SSE chunks of `reply`, each with whether it carries content, as real servers send
    them: an empty first delta, null contents, tool-call arguments split across chunks."""
    base = {
        "id": reply.id,
        "object": "chat.completion.chunk",
        "created": 0,
        "model": reply.model or model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {**base, "choices": [choice]}

    size = reply.chunk_size
    yield chunk({"role": "assistant", "content": ""}), False
    for piece in _chunks(reply.reasoning_content or "", size):
        yield chunk({"reasoning_content": piece, "content": None}), False
    for piece in _chunks(reply.content, size):
        yield chunk({"content": piece}), True
    for piece in _chunks(reply.refusal or "", size):
        yield chunk({"refusal": piece, "content": None}), False
    for calls in _tool_call_deltas(reply):
        yield chunk({"content": None, "tool_calls": calls}), False
    finish = _finish(reply)
    if finish is not None:
        yield chunk({}, finish), False
    if include_usage and reply.usage is not None:
        yield {**base, "choices": [], "usage": reply.usage}, False


def _tool_call_deltas(reply: Reply) -> Iterator[list[dict[str, Any]]]:
    """The `tool_calls` lists of the stream's tool-call chunks: per call a head with id and
    name, then its arguments in pieces; or, with `tool_calls_in_one_chunk`, one list of
    every call whole."""

    def numbered(delta: dict[str, Any], position: int) -> dict[str, Any]:
        if reply.tool_call_index == "omitted":
            return delta
        return {"index": position if reply.tool_call_index == "position" else 0, **delta}

    def head(position: int, call: Call, arguments: str) -> dict[str, Any]:
        function = {"name": call.name, "arguments": arguments}
        delta = {"id": call.id or f"call_{position}", "type": "function", "function": function}
        return numbered(delta, position)

    calls = list(enumerate(reply.tool_calls))
    if reply.tool_calls_in_one_chunk:
        if calls:
            yield [head(i, call, call.arguments) for i, call in calls]
        return
    for i, call in calls:
        yield [head(i, call, "")]
        for piece in _chunks(call.arguments, reply.chunk_size):
            yield [numbered({"function": {"arguments": piece}}, i)]
