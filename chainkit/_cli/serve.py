"""`chainkit serve [module:factory]`: a chain or agent behind HTTP, chainkit.serving's app under
uvicorn.

The factory follows `chainkit batch --agent`: a function (or class) returning an Executor, a
pipeline or any Chain, or such a value; without one, the built-in offline agent of `chainkit
run` is served, and stderr says so. The token clients must send comes from the environment
(CHAINKIT_SERVE_TOKEN), never from the command line, where `ps` shows it to every user.
`--no-auth` serves without one, on a loopback host only.

One process serves with `serving.http_server` (uvicorn, draining the app's runs at a stop while
it still listens); `--workers N` runs N such processes on the one listening socket
(`chainkit._cli.serve_workers`).

Exit statuses: 0 the server stopped as asked (SIGTERM or Ctrl-C, after its graceful shutdown);
1 it could not start (no serve extra, a factory that fails, a port taken); 2 a usage error (no
token, `--no-auth` on a host others reach, a factory that gives no chain).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from chainkit._cli import agent, exit_status, stderr
from chainkit._cli.arguments import count, not_empty, port, positive, seconds
from chainkit._cli.served import (
    COMMAND,
    EXAMPLE,
    TOKEN_VARIABLE,
    app_of,
    chain_to_serve,
    serve_app,
)
from chainkit._text import counted

if TYPE_CHECKING:
    from starlette.applications import Starlette


DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
SHORT_TOKEN = 16
_LOOPBACK_NAMES = frozenset({"localhost"})


class _Refused(Exception):
    """What the command was told cannot be served: a usage error, with its message."""


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `serve` to the `chainkit` command's subcommands."""
    command = commands.add_parser(
        COMMAND,
        help="serve a chain or agent over HTTP (needs the serve extra)",
        description=(
            "Serve the chain, pipeline or agent a factory returns over HTTP: POST /invoke "
            "and /stream, /v1/chat/completions, /health and /ready. Every request must carry "
            f"'Authorization: Bearer <token>', the token being {TOKEN_VARIABLE} of the "
            "environment. SIGTERM or Ctrl-C stops it gracefully. Needs "
            "pip install 'chainkit[serve]'."
        ),
    )
    command.add_argument(
        "factory",
        nargs="?",
        metavar="module:factory",
        help=f"a function returning the chain to serve, e.g. {EXAMPLE} "
        "(default: the built-in offline agent)",
    )
    command.add_argument(
        "--host",
        type=not_empty,
        default=DEFAULT_HOST,
        help=f"the address to listen on (default {DEFAULT_HOST}; 0.0.0.0 for every interface)",
    )
    command.add_argument(
        "--port",
        type=port,
        default=DEFAULT_PORT,
        help=f"the port (default {DEFAULT_PORT}; 0 picks a free one, said on stderr)",
    )
    command.add_argument(
        "--workers",
        type=positive,
        default=1,
        metavar="N",
        help="server processes, each building the chain from the factory (default 1)",
    )
    command.add_argument(
        "--db",
        metavar="DATABASE",
        help=(
            "the checkpointer of an agents.Executor that has none: a SQLite file or a "
            "postgresql:// URL (several workers or machines: PostgreSQL)"
        ),
    )
    command.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        type=not_empty,
        metavar="ORIGIN",
        help="an origin browsers may call from, e.g. https://app.example.com (repeat for more; "
        "default none: CORS off)",
    )
    command.add_argument(
        "--max-body",
        type=positive,
        metavar="BYTES",
        help="the largest request body; a larger one is answered 413 (default 1048576)",
    )
    command.add_argument(
        "--max-runs-per-client",
        type=positive,
        metavar="N",
        help="runs one client may have in flight; one more is answered 429 (default 16)",
    )
    command.add_argument(
        "--requests-per-minute",
        type=positive,
        metavar="N",
        help="runs one client may start a minute; one more is answered 429 (default: no limit)",
    )
    command.add_argument(
        "--traces-kept",
        type=count,
        metavar="N",
        help="runs whose trace each server process keeps for its trace page (default 64; 0 "
        "records none, which spares each run the recording)",
    )
    command.add_argument(
        "--grace",
        type=seconds,
        metavar="SECONDS",
        help="at a stop, how long runs in flight get to finish before they are cancelled "
        "(default 30)",
    )
    command.add_argument(
        "--no-auth",
        action="store_true",
        help=f"serve without a token (only on a loopback host: {DEFAULT_HOST}, ::1, localhost)",
    )


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Runs `chainkit serve` until it is stopped; its exit status (see the module's)."""
    try:
        plan = _plan(args, os.environ)
    except _Refused as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.USAGE
    if not _serve_extra_installed():
        stderr.error(COMMAND, "it needs the serve extra: pip install 'chainkit[serve]'")
        return exit_status.FAILED
    if args.factory is None:
        stderr.tell(COMMAND, f"serving the built-in offline agent; {EXAMPLE} serves yours")
    status, app = _checked_app(plan, keep=args.workers == 1)
    if status != exit_status.SUCCESS:
        return status
    try:
        listening = _listening_socket(args.host, args.port)
    except OSError as refused:
        stderr.error(COMMAND, f"cannot listen on {args.host} port {args.port}: {refused}")
        return exit_status.FAILED
    with listening:
        workers = "" if args.workers == 1 else f" with {args.workers} workers"
        stderr.tell(COMMAND, f"serving {plan['factory']}{workers} at {_url(listening)}")
        if app is not None:
            return serve_app(app, listening, plan)
        from chainkit._cli.serve_workers import serve_in_workers

        return serve_in_workers(listening, plan, args.workers)


def _plan(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    """What to serve and how, as plain data a worker process is given (the token is left
    out: each process reads it from its environment); _Refused naming what cannot be."""
    token = environ.get(TOKEN_VARIABLE)
    if args.no_auth:
        if token:  # set empty, as `CHAINKIT_SERVE_TOKEN= chainkit serve` does, it says none
            raise _Refused(f"--no-auth and {TOKEN_VARIABLE} are both given: unset one")
        if not is_loopback(args.host):
            raise _Refused(
                f"--no-auth serves without a token, so only on a loopback host ({DEFAULT_HOST}, "
                f"::1, localhost), not {args.host}: set {TOKEN_VARIABLE} instead"
            )
    elif token is None:
        raise _Refused(
            f"set {TOKEN_VARIABLE} to the token clients must send (as a bearer token in the "
            f"Authorization header), or serve without one on {DEFAULT_HOST} with --no-auth"
        )
    else:
        _check_token(token)
    given = {
        "max_body_bytes": args.max_body,
        "max_runs_per_client": args.max_runs_per_client,
        "requests_per_minute": args.requests_per_minute,
        "traces_kept": args.traces_kept,
        "grace_seconds": args.grace,
    }
    return {
        "factory": args.factory or agent.SPEC,
        "db": args.db,
        "settings": {
            "no_auth": args.no_auth,
            "cors_origins": args.cors_origin,
            **{name: value for name, value in given.items() if value is not None},
        },
    }


def _check_token(token: str) -> None:
    """_Refused unless the token can travel in a header as it is; a warning when it is short
    enough to guess. Neither message shows it."""
    if not token:
        raise _Refused(f"{TOKEN_VARIABLE} is empty")
    if not all("!" <= character <= "~" for character in token):
        # A client sends it in a header: spaces at its ends are dropped on the way, and
        # what is not ASCII is encoded differently by each client, so it would never match.
        raise _Refused(f"{TOKEN_VARIABLE} must be printable ASCII, without spaces")
    if len(token) < SHORT_TOKEN:
        stderr.tell(
            COMMAND,
            f"warning: {TOKEN_VARIABLE} has {counted(len(token), 'character')}: a token is safe "
            "from guessing with 32 random ones, e.g. python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))'",
        )


def is_loopback(host: str) -> bool:
    """Whether `host` is an address (or the name) that only this machine reaches."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _serve_extra_installed() -> bool:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in ("starlette", "uvicorn"):
            raise
        return False
    return True


def _checked_app(plan: Mapping[str, Any], keep: bool) -> tuple[int, Starlette | None]:
    """Builds the app here first, so that a factory, a database or a setting that fails is
    one error line before anything listens; the status, and the app when `keep` (one process
    serves it), else None (and the store it opened is closed: each worker opens its own)."""
    from chainkit._cli.runs import open_store
    from chainkit._errors import ChainkitError, FactoryError
    from chainkit.serving.errors import ServeConfigError

    factory, db = plan["factory"], plan["db"]
    try:
        store = None if db is None else open_store(db)
    except Exception as failed:
        stderr.error(COMMAND, f"--db: {failed}")  # the store names it, without a password
        return exit_status.FAILED, None
    try:
        chain = chain_to_serve(factory, store)
    except (FactoryError, ServeConfigError) as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.USAGE, None
    except Exception as failed:
        stderr.error(
            COMMAND, f"{factory} failed to build the chain: {type(failed).__name__}: {failed}"
        )
        return exit_status.FAILED, None
    try:
        app = app_of(chain, plan)
    except ChainkitError as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.USAGE, None
    if keep:
        return exit_status.SUCCESS, app
    if store is not None:
        store.close()
    return exit_status.SUCCESS, None


def _listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on `host`:`port`, bound here so that a taken port is one error line
    and port 0's pick is known before serving; the workers share it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.create_server((host.strip("[]"), port), family=family, backlog=2048)
    listening.set_inheritable(True)
    return listening


def _url(listening: socket.socket) -> str:
    host, port = listening.getsockname()[:2]
    shown = f"[{host}]" if listening.family == socket.AF_INET6 else host
    return f"http://{shown}:{port}"
