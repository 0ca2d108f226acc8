"""The one writer of the `chainkit` command's lines for the user: `chainkit <command>: …` on
stderr, keys masked, and every character that could drive the terminal or hide text escaped
(a run id, a tool name or a message from a store or a model may hold them).

A closed or broken stderr loses the line, never the command's result (with stderr closed at
start, `print` would send the line to stdout, which holds the answer, or the MCP protocol).
"""

from __future__ import annotations

import sys
from contextlib import suppress

from chainkit._redact import redact
from chainkit._text import visible


def tell(command: str, text: str) -> None:
    """Writes `chainkit <command>: text` on stderr (`chainkit: text` for the command as a
    whole, `command=""`)."""
    if sys.stderr is None:
        return
    prefix = f"chainkit {command}" if command else "chainkit"
    with suppress(OSError, ValueError):  # broken, or closed under us
        lines = redact(f"{prefix}: {text}").split("\n")
        sys.stderr.write("\n".join(visible(line) for line in lines) + "\n")
        sys.stderr.flush()


def error(command: str, text: str) -> None:
    """Writes `chainkit <command>: error: text` on stderr."""
    tell(command, f"error: {text}")


def failure(command: str, failed: BaseException) -> None:
    """Writes `chainkit <command>: error: Type: message` for an exception nothing foresaw."""
    error(command, f"{type(failed).__name__}: {failed}")
