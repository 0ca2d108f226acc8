"""A TCP proxy on 127.0.0.1 that acts like a server whose idle keep-alive timeout ends just as
the client sends on the connection again: a request that arrives on a connection idle for longer
than `idle_seconds` is answered with a reset, never forwarded. Real servers (uvicorn, node:
5 s) do this in a narrow window; the proxy makes the window certain.

With `cut_after` set to some bytes, the next request holding them is forwarded, and the
connection is cut when the server's reply comes, before it reaches the client: a reply lost
with its connection (a COMMIT that took effect, never acknowledged)."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Iterator


class _Connection:
    def __init__(
        self, proxy: IdleResetProxy, client: socket.socket, upstream: socket.socket
    ) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.idle_seconds = proxy.idle_seconds
        self.last_traffic = time.monotonic()
        self.resets = 0
        self.cutting = False

    def pump(self, source: socket.socket, target: socket.socket, from_client: bool) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                idle = time.monotonic() - self.last_traffic
                if from_client and idle > self.idle_seconds:
                    self.resets += 1
                    self.reset()
                    return
                if not from_client and self.cutting:  # the reply to the request it cuts after
                    self.reset()
                    return
                cut_after = self.proxy.cut_after
                if from_client and cut_after is not None and cut_after in data:
                    self.proxy.cut_after, self.cutting = None, True
                self.last_traffic = time.monotonic()
                target.sendall(data)
        self.close()

    def reset(self) -> None:
        # SO_LINGER with a zero timeout makes close() send RST, as a server closing a socket
        # with an unread request does.
        self.client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close()

    def close(self) -> None:
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


class IdleResetProxy:
    def __init__(self, target_port: int, idle_seconds: float) -> None:
        self.target_port = target_port
        self.idle_seconds = idle_seconds
        self.connections: list[_Connection] = []
        self.cut_after: bytes | None = None
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]

    @property
    def resets(self) -> int:
        return sum(connection.resets for connection in self.connections)

    def serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self._listener.accept()
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
                connection = _Connection(self, client, upstream)
                self.connections.append(connection)
                for source, target, from_client in (
                    (client, upstream, True),
                    (upstream, client, False),
                ):
                    threading.Thread(
                        target=connection.pump, args=(source, target, from_client), daemon=True
                    ).start()

    def close(self) -> None:
        self._listener.close()
        for connection in self.connections:
            connection.close()


@contextlib.contextmanager
def idle_reset_proxy(target_port: int, idle_seconds: float) -> Iterator[IdleResetProxy]:
    proxy = IdleResetProxy(target_port, idle_seconds)
    threading.Thread(target=proxy.serve, daemon=True).start()
    try:
        yield proxy
    finally:
        proxy.close()
