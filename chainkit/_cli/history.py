"""`chainkit history list|show|delete --db WHERE`: the sessions a chat history (memory.SQLHistory)
holds, one session's messages, and deleting a session."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from chainkit._cli import arguments, exit_status, stderr
from chainkit._cli.databases import check_existing
from chainkit._cli.runs import cell
from chainkit._text import counted, quoted, visible_json

if TYPE_CHECKING:
    from chainkit.memory import SQLHistory

COMMAND = "history"


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `history` to the `chainkit` command's subcommands."""
    command = commands.add_parser(
        COMMAND,
        help="list, show and delete the sessions of a chat history",
        description=(
            "The conversations kept by memory.SQLHistory(WHERE) (or chains.with_history over "
            "it), in a SQLite file or in PostgreSQL when --db is a postgresql:// URL: list "
            "the sessions, show one's messages as JSON lines, or delete one."
        ),
    )
    actions = command.add_subparsers(dest="action", required=True, metavar="{list,show,delete}")
    listing = actions.add_parser("list", help="the session ids, one a line")
    showing = actions.add_parser("show", help="a session's messages, one JSON object a line")
    deleting = actions.add_parser("delete", help="delete a session and its messages")
    for parser in (listing, showing, deleting):
        parser.add_argument(
            "--db", required=True, metavar="WHERE", help="the SQLite file, or a postgresql:// URL"
        )
    for parser in (showing, deleting):
        parser.add_argument("session", metavar="SESSION")
    showing.add_argument(
        "--last", type=arguments.count, metavar="N", help="only the last N messages (default: all)"
    )


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Runs `chainkit history`; its exit status."""
    from chainkit._errors import StoreConfigError, StoreError
    from chainkit.memory import SQLHistory
    from chainkit.memory.errors import MemoryTypeError, MemoryValueError

    try:
        check_existing(args.db, "chainkit_history", "chainkit's chat histories", "a SQLHistory")
        history = SQLHistory(args.db)
    except (StoreConfigError, StoreError) as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.FAILED
    try:
        if args.action == "list":
            for session in history.sessions():
                print(cell(session))
            return exit_status.SUCCESS
        return _show(history, args) if args.action == "show" else _delete(history, args)
    except (MemoryTypeError, MemoryValueError) as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.USAGE
    except StoreError as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.FAILED
    finally:
        history.close()


def _show(history: SQLHistory, args: argparse.Namespace) -> int:
    messages = history.messages(args.session, last=args.last)
    if not messages and args.last != 0:
        return _no_session(history, args)
    for message in messages:
        print(visible_json(json.dumps(message.to_dict(), ensure_ascii=False)))
    return exit_status.SUCCESS


def _delete(history: SQLHistory, args: argparse.Namespace) -> int:
    held = len(history.messages(args.session))
    if not held:
        return _no_session(history, args)
    history.clear(args.session)
    stderr.tell(
        COMMAND, f"deleted session {quoted(args.session, 200)} ({counted(held, 'message')})"
    )
    return exit_status.SUCCESS


def _no_session(history: SQLHistory, args: argparse.Namespace) -> int:
    stderr.error(  # the history's repr: a DSN's password never shows
        COMMAND,
        f"no session {quoted(args.session, 200)} in {history!r} "
        "(chainkit history list shows the sessions it holds)",
    )
    return exit_status.FAILED
