"""A tiny MCP server over HTTP, in a thread of the test process, that answers with an HTTP error
status on request: like a server behind a gateway that wants a token, or a wrong path.

It serves `tests/support/mcp_legacy_server.py`'s tools as JSON responses at /mcp; any other path is
404. While `refuse_with` is set, every request gets that status instead.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.mcp_legacy_server import answer

PATH = "/mcp"


class StatusServer(ThreadingHTTPServer):
    daemon_threads = True
    refuse_with: int | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}{PATH}"


class _Handler(BaseHTTPRequestHandler):
    server: StatusServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        status = self.server.refuse_with
        if status is None and self.path != PATH:
            status = 404
        if status is not None:
            self._send(status, b"denied", "text/plain")
            return
        message = json.loads(body)
        if "id" not in message:
            self._send(202, b"", "text/plain")  # a notification
            return
        try:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message)}
        except LookupError as error:
            failure = {"code": -32601, "message": f"no method {error}"}
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": failure}
        self._send(200, json.dumps(reply).encode(), "application/json")

    def do_GET(self) -> None:
        self._send(405, b"", "text/plain")  # no stream of server messages

    def do_DELETE(self) -> None:
        self._send(405, b"", "text/plain")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # the tests read no access log


@contextmanager
def status_server() -> Iterator[StatusServer]:
    """A StatusServer on 127.0.0.1 at a free port, for the duration of the block."""
    server = StatusServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
