"""A request the server refuses: its status, a code a client can branch on, and a message that
names what was wrong (never a traceback, never a provider's text). Every 4xx and 5xx body is
`{"error": {"code", "message"}}` (with `run_id` when a run was started)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Problem(Exception):
    """Raised by a route to answer with an error; the app turns it into its JSON response."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        run_id: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.run_id = run_id
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.run_id is not None:
            error["run_id"] = self.run_id
        return {"error": error}
