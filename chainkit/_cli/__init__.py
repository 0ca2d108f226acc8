"""The `chainkit` command: `run`, `batch`, `mcp-serve` and `trace`, one module each.

`entry_point` builds the parser and dispatches; `arguments` holds the argument types the
commands share, `stderr` the one writer of their `chainkit <command>: …` lines, `exit_status`
what the process ends with, and `agent` the built-in agent that `run` and `batch` both build.
"""

from chainkit._cli.entry_point import main

__all__ = ["main"]
