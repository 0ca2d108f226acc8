"""`chainkit trace FILE [--html PAGE]`: the runs of a trace file as a tree, or as a web page."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from chainkit._cli import exit_status, stderr
from chainkit.callbacks.errors import TraceFormatError
from chainkit.callbacks.trace_html import render_html
from chainkit.callbacks.trace_view import format_tree, read_trace

COMMAND = "trace"


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `trace` to the `chainkit` command's subcommands."""
    command = commands.add_parser(
        COMMAND,
        help="show the runs of a trace file (from chainkit run --trace) as a tree",
        description=(
            "Print the runs of FILE, a trace written by `chainkit run --trace FILE` or "
            "callbacks.TraceFile, as an indented tree: kind, name, duration, tokens, the "
            "first line of inputs and outputs, and what each model call's prompt added to the "
            "one before. With --html, write a timeline page instead."
        ),
    )
    command.add_argument("file", metavar="FILE", help="the trace file (JSON lines)")
    command.add_argument(
        "--html",
        metavar="PAGE",
        help="write a self-contained HTML timeline to PAGE (open it in any browser)",
    )


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Runs `chainkit trace`; the exit status."""
    try:
        with _warnings_told():
            roots = read_trace(args.file)
        if not roots:
            stderr.error(COMMAND, f"{args.file} holds no trace events (is it empty?)")
            return exit_status.FAILED
        if args.html is not None:
            # A lone surrogate (from a name that was not UTF-8) as its escape, valid in the script.
            with open(args.html, "w", encoding="utf-8", errors="backslashreplace") as page:
                page.write(render_html(roots, title=f"chainkit trace {args.file}"))
            stderr.tell(COMMAND, f"wrote {args.html}")
            return exit_status.SUCCESS
    except (OSError, TraceFormatError) as unread:
        stderr.error(COMMAND, str(unread))
        return exit_status.FAILED
    except RecursionError:  # data nested past what a line's own check could foresee
        stderr.error(COMMAND, f"{args.file} nests its data too deeply to be shown")
        return exit_status.FAILED
    print(format_tree(roots))
    return exit_status.SUCCESS


class _Told(logging.Handler):
    """A warning of the `chainkit` logger as one of the command's lines."""

    def emit(self, record: logging.LogRecord) -> None:
        stderr.tell(COMMAND, f"warning: {record.getMessage()}")


@contextmanager
def _warnings_told() -> Iterator[None]:
    """The warnings of reading a trace (a line cut short) on stderr as the command's lines,
    not as whatever logging would make of them."""
    logger = logging.getLogger("chainkit")
    told, propagates = _Told(logging.WARNING), logger.propagate
    logger.addHandler(told)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(told)
        logger.propagate = propagates
