"""`chainkit cache stats|clear --db WHERE`: what a response cache (`llms.SQLCache`) holds, and
emptying it."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from chainkit._cli import exit_status, stderr
from chainkit._cli.databases import check_existing
from chainkit._text import counted

if TYPE_CHECKING:
    from chainkit.llms.sql_cache import SQLCache

COMMAND = "cache"


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `cache` to the `chainkit` command's subcommands."""
    command = commands.add_parser(
        COMMAND,
        help="show or clear the model replies a SQL response cache holds",
        description=(
            "The replies kept by llms.SQLCache(WHERE): a SQLite file, or a PostgreSQL database "
            "when --db is a postgresql:// URL. `stats` shows how many, their size, their hits "
            "(from every process) and when they were put and last used; `clear` removes them."
        ),
    )
    actions = command.add_subparsers(dest="action", required=True, metavar="{stats,clear}")
    stats = actions.add_parser("stats", help="how many replies, their size, hits and ages")
    clear = actions.add_parser("clear", help="remove every reply")
    for parser in (stats, clear):
        parser.add_argument(
            "--db",
            required=True,
            metavar="CACHE.db",
            help="the SQLite file, or a postgresql:// URL",
        )


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Runs `chainkit cache`; its exit status."""
    from chainkit._errors import StoreConfigError, StoreError
    from chainkit.llms.sql_cache import TABLE, SQLCache

    try:
        check_existing(args.db, TABLE, "a response cache", "an llms.SQLCache")
        cache = SQLCache(args.db)
    except (StoreConfigError, StoreError) as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.FAILED
    try:
        if args.action == "stats":
            print(_described(cache))
        else:
            entries = cache.stored().entries
            cache.clear()
            print(f"removed {counted(entries, 'reply')}")
    except StoreError as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.FAILED
    finally:
        cache.close()
    return exit_status.SUCCESS


def _described(cache: SQLCache) -> str:
    stored = cache.stored()
    lines = [
        f"replies: {stored.entries:,}",
        f"hits: {stored.hits:,}",
        f"size: {stored.characters:,} characters",
    ]
    if stored.oldest is not None and stored.last_used is not None:
        lines.append(f"oldest put: {_when(stored.oldest)}")
        lines.append(f"last used: {_when(stored.last_used)}")
    return "\n".join(lines)


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))
