"""The `chainkit` command: `run`, `batch`, `mcp-serve` and `trace`, one module each.

`entry_point` builds the parser and dispatches (its `main` is the console script);
`arguments` holds the argument types the commands share, `stderr` the one writer of their
`chainkit <command>: …` lines, `exit_status` what the process ends with, and `agent` the
built-in agent that `run` and `batch` both build (which Ray actors import: this package loads
no command until one is asked for).
"""
