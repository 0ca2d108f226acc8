"""The `chainkit` command's parser, and how the process ends: the command's status, 141 and
nothing said when the reader of its output goes away, 130 and one line when interrupted."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from contextlib import suppress
from typing import Protocol

from chainkit._cli import (
    batch,
    cache,
    exit_status,
    history,
    index,
    mcp_serve,
    run,
    runs,
    search,
    serve,
    stderr,
    trace,
)


class _Command(Protocol):
    """A command's module: it adds its parser, and runs what was parsed."""

    COMMAND: str  # its name on the command line

    def add_command(self, commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        """Adds the command to `chainkit`'s subcommands."""

    def run_command(self, args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        """Runs the command; its exit status. `parser.error` reports a usage error."""


# In the order `chainkit -h` lists them.
_COMMANDS: dict[str, _Command] = {
    command.COMMAND: command
    for command in (run, serve, mcp_serve, batch, runs, history, cache, index, search, trace)
}


class _Version(argparse.Action):
    """`--version`, read from the installed metadata only when asked: reading it costs every
    command about 25 ms of start-up otherwise."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version"
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from chainkit import __version__

        print(f"chainkit {__version__}")
        parser.exit()


def parser() -> argparse.ArgumentParser:
    """The parser of `chainkit` and its commands."""
    main_parser = argparse.ArgumentParser(
        prog="chainkit", description="Run a chainkit agent from the command line."
    )
    main_parser.add_argument("--version", action=_Version)
    commands = main_parser.add_subparsers(dest="command", required=True)
    for command in _COMMANDS.values():
        command.add_command(commands)
    return main_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the `chainkit` command on `argv` (by default the process's); its exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader of stdout (or stderr) went away, as `| head` does: nothing is left to
        # say. Both go to /dev/null so that flushing them at exit raises nothing either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):  # not a real file, as under a test's capture
                os.dup2(devnull, stream.fileno())
        return exit_status.BROKEN_PIPE
    except KeyboardInterrupt:
        stderr.tell("", "interrupted")
        return exit_status.INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    main_parser = parser()
    args, extra = main_parser.parse_known_args(argv)
    if extra:
        hint = run.misplaced(args, extra) if args.command == "run" else None
        main_parser.error(hint or f"unrecognized arguments: {' '.join(extra)}")
    command = _COMMANDS[args.command]
    return command.run_command(args, main_parser)
