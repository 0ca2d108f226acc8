"""`chainkit runs list|show|resume --db RUNS.db`: the runs a checkpoint store holds, one
run's saved state, and continuing a run that stopped."""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING

from chainkit._cli import agent, exit_status, stderr
from chainkit._cli.databases import check_existing
from chainkit._errors import StoreConfigError
from chainkit._store import is_dsn
from chainkit._text import counted, one_line, visible, visible_json

if TYPE_CHECKING:
    from chainkit.checkpoints import PostgresStore, SQLiteStore

    Store = SQLiteStore | PostgresStore

COMMAND = "runs"
_CELL = 200
"""How many characters of a run id (or agent, status) a listing shows."""


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `runs` to the `chainkit` command's subcommands."""
    command = commands.add_parser(
        COMMAND,
        help="list, show and resume the checkpointed runs of a SQLite store",
        description=(
            "The runs saved by an Executor with checkpointer=checkpoints.SQLiteStore(RUNS.db) "
            "(or chainkit batch --checkpoint), or in PostgreSQL when --db is a postgresql:// "
            "URL: list them, show one's state as JSON, or resume one that stopped from its "
            "last completed step."
        ),
    )
    actions = command.add_subparsers(dest="action", required=True, metavar="{list,show,resume}")
    listing = actions.add_parser("list", help="the runs, most recently saved first")
    showing = actions.add_parser("show", help="a run's saved state, as JSON")
    resuming = actions.add_parser("resume", help="continue a run that stopped; print its answer")
    for parser in (listing, showing, resuming):
        parser.add_argument(
            "--db",
            required=True,
            metavar="RUNS.db",
            help="the SQLite file, or a postgresql:// URL",
        )
    for parser in (showing, resuming):
        parser.add_argument("run_id", metavar="RUN_ID")
    resuming.add_argument(
        "--agent",
        metavar="module:factory",
        help="the function that built the run's Executor (default: the built-in agent)",
    )
    resuming.add_argument(
        "--approve",
        action="store_true",
        help=(
            "a run paused for approval: ask at the terminal for each waiting call (y / n with "
            "a reason / e to edit its arguments as JSON)"
        ),
    )
    resuming.add_argument(
        "--interrupted",
        choices=("raise", "repeat", "skip"),
        default="raise",
        help=(
            "a call of a tool that is not idempotent, cut in the middle: report it (default), "
            "repeat it, or tell the model its outcome is unknown"
        ),
    )


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Runs `chainkit runs`; its exit status."""
    from chainkit.checkpoints import CheckpointError, StoreError

    try:
        store = _existing_store(args.db)
    except (CheckpointError, StoreError, StoreConfigError) as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.FAILED
    try:
        if args.action == "list":
            _list(store)
        elif args.action == "show":
            state = store.load(args.run_id).to_dict()
            print(visible_json(json.dumps(state, indent=2, ensure_ascii=False)))
        else:
            return _resume(store, args)
    except (CheckpointError, StoreError) as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.FAILED
    finally:
        store.close()
    return exit_status.SUCCESS


def open_store(location: str) -> Store:
    """The store at `location`: a PostgreSQL URL, else a SQLite file."""
    from chainkit.checkpoints import PostgresStore, SQLiteStore

    if is_dsn(location):
        return PostgresStore(location)
    return SQLiteStore(location)


def _existing_store(location: str) -> Store:
    """The store at `location`, which must hold chainkit's runs if it is a SQLite file:
    `runs` reads a store, and a mistyped path never becomes a new one."""
    writer = "an Executor's SQLiteStore (or chainkit batch --checkpoint)"
    check_existing(location, "chainkit_runs", "chainkit's runs", writer)
    return open_store(location)


def _list(store: Store) -> None:
    print("RUN_ID\tAGENT\tSTATUS\tSTEPS\tSAVED")
    for run in store.runs():
        fields = (run.run_id, run.agent, run.status, str(run.steps), _saved(run.updated))
        print("\t".join(cell(field) for field in fields))


def cell(text: object) -> str:
    """A listed value as one cell: shortened, and with every character that would break the
    line or the columns, or drive the terminal, escaped (tabs too)."""
    return visible(one_line(str(text), _CELL))


def _saved(updated: object) -> str:
    """When a run was saved, as local time; what the row holds when it is no time."""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(updated))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError):
        return repr(updated)


def _resume(store: Store, args: argparse.Namespace) -> int:
    from chainkit import chains
    from chainkit._errors import FactoryError
    from chainkit._factory import load
    from chainkit.agents import Executor
    from chainkit.checkpoints import CheckpointError, StoreError

    spec = args.agent or agent.SPEC
    try:
        executor = load(spec, "mypackage.agents:make_agent", (Executor,))
        if not isinstance(executor, Executor):
            raise FactoryError(f"{spec} gave {type(executor).__name__}, not an agents.Executor")
    except FactoryError as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.USAGE
    executor.checkpointer = store
    waiting = executor.waiting_requests(store.load(args.run_id))
    kept = f"run {args.run_id} stays paused; nothing was decided or run"
    if waiting and not args.approve:
        tools = ", ".join(request.tool for request in waiting)
        stderr.error(
            COMMAND,
            f"run {args.run_id} is paused for approval of {counted(len(waiting), 'call')} "
            f"({tools}): resume it with --approve to decide them at the terminal",
        )
        return exit_status.FAILED
    decisions = None
    if waiting:
        from chainkit._cli.approve import answer_at_terminal, ask_at_terminal
        from chainkit.agents import ApprovalRequest

        try:
            decisions = [
                ask_at_terminal(request, COMMAND)
                if isinstance(request, ApprovalRequest)
                else answer_at_terminal(request, COMMAND)
                for request in waiting
            ]
        except EOFError:
            stderr.error(COMMAND, f"the input ended before every call was decided; {kept}")
            return exit_status.FAILED
        except KeyboardInterrupt:
            stderr.tell(COMMAND, f"interrupted; {kept}")
            return exit_status.INTERRUPTED
    try:
        outputs = chains.resume(executor, args.run_id, decisions, interrupted=args.interrupted)
    except (CheckpointError, StoreError):
        raise
    except Exception as failed:  # the run's own failure: a model error, NotFinishedError, …
        stderr.failure(COMMAND, failed)
        return exit_status.FAILED
    if outputs.get("pending") is not None:
        stderr.error(
            COMMAND,
            f"run {args.run_id} paused again for approval; resume it with --approve",
        )
        return exit_status.FAILED
    keys = executor.output_keys
    answer = outputs[keys[0]] if len(keys) == 1 else outputs
    print(answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False))
    return exit_status.SUCCESS
