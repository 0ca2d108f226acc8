"""uvicorn's Server with the served app drained first at shutdown (see `_http_server`); apart
from it because subclassing needs uvicorn imported, which only making a server may do."""

from __future__ import annotations

import socket

import uvicorn

from chainkit.serving._server import Server


class DrainingServer(uvicorn.Server):
    """Drains `app_server` (the served app's) before uvicorn stops listening."""

    def __init__(self, config: uvicorn.Config, app_server: Server) -> None:
        super().__init__(config)
        self.app_server = app_server

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self.app_server.drain()
        await super().shutdown(sockets)
