"""`chainkit serve [module:factory]`: a chain or agent behind HTTP, chainkit.serving's app under
uvicorn.

The factory follows `chainkit batch --agent`: a function (or class) returning an Executor, a
pipeline or any Chain, or such a value; without one, the built-in offline agent of `chainkit
run` is served, and stderr says so. The token clients must send comes from the environment
(CHAINKIT_SERVE_TOKEN), never from the command line, where `ps` shows it to every user.
`--no-auth` serves without one, on a loopback host only.

`--workers N` runs N processes on the one listening socket. uvicorn starts each from an import
string, so each builds its own app from the factory in `chainkit._cli.serve_worker`, reading
what this command decided from an environment variable it sets (the token stays in its own).

Exit statuses: 0 the server stopped as asked (SIGTERM or Ctrl-C, after its graceful shutdown);
1 it could not start (no serve extra, a factory that fails, a port taken); 2 a usage error (no
token, `--no-auth` on a host others reach, a factory that gives no chain).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import math
import os
import signal
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from chainkit._cli import agent, exit_status, stderr
from chainkit._cli.arguments import not_empty, port, positive, seconds

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from chainkit.chains import Chain
    from chainkit.checkpoints import Checkpointer
    from chainkit.serving import ServerSettings

COMMAND = "serve"
TOKEN_VARIABLE = "CHAINKIT_SERVE_TOKEN"  # noqa: S105 - the name of a variable, no secret
WORKER_VARIABLE = "CHAINKIT_SERVE_WORKER"
"""Where the command leaves the workers what to serve and how (never the token)."""
WORKER_APP = "chainkit._cli.serve_worker:app"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
SHORT_TOKEN = 16
_EXAMPLE = "mypackage.agents:make_agent"
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
        help=f"a function returning the chain to serve, e.g. {_EXAMPLE} "
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
        "--grace",
        type=seconds,
        metavar="SECONDS",
        help="at a stop, how long requests in flight get to finish, then runs still going "
        "as long again (default 30)",
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
        stderr.tell(COMMAND, f"serving the built-in offline agent; {_EXAMPLE} serves yours")
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
            return _serve_here(app, listening, plan)
        return _serve_in_workers(listening, plan, args.workers)


def _plan(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    """What to serve and how, as JSON the workers read back (the token is left out: each
    process reads it from its environment); _Refused naming what cannot be."""
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
            f"warning: {TOKEN_VARIABLE} has {len(token)} characters: a token is safe from "
            "guessing with 32 random ones, e.g. python -c 'import secrets; "
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


def chain_to_serve(factory: str, store: Checkpointer | None) -> Chain:
    """The chain `factory` gives, given `store` as its checkpointer (--db's): FactoryError
    when it gives no chain, ServeConfigError when `store` cannot be its checkpointer."""
    from chainkit._batch.runner import chain_of
    from chainkit._factory import load
    from chainkit.agents import Executor
    from chainkit.chains import Chain
    from chainkit.serving.errors import ServeConfigError

    chain = chain_of(load(factory, _EXAMPLE, (Chain,)), factory)
    if store is None:
        return chain
    if not isinstance(chain, Executor):
        raise ServeConfigError(
            f"--db is the checkpointer of an agents.Executor; {factory} gave {type(chain).__name__}"
        )
    if chain.checkpointer is not None:
        raise ServeConfigError(
            f"the agent of {factory} has a checkpointer already: leave out --db, or its own"
        )
    chain.checkpointer = store
    return chain


def app_of(chain: Chain, plan: Mapping[str, Any]) -> Starlette:
    """The app serving `chain` with the plan's settings and the token of the environment."""
    from chainkit.serving import create_app

    return create_app(chain, settings_of(plan["settings"], os.environ))


def settings_of(chosen: Mapping[str, Any], environ: Mapping[str, str]) -> ServerSettings:
    from chainkit.serving import ServerSettings

    return ServerSettings(
        token=environ.get(TOKEN_VARIABLE) or None,
        **{**chosen, "cors_origins": tuple(chosen["cors_origins"])},
    )


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


def _serve_here(app: Starlette, listening: socket.socket, plan: Mapping[str, Any]) -> int:
    import uvicorn

    server = uvicorn.Server(_config(app, plan))
    try:
        with _stopped_quietly():
            server.run(sockets=[listening])
    except SystemExit:  # uvicorn's own way out when the app's startup fails
        return _not_started()
    return exit_status.SUCCESS if server.started else _not_started()


def _serve_in_workers(listening: socket.socket, plan: Mapping[str, Any], workers: int) -> int:
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    os.environ[WORKER_VARIABLE] = json.dumps(plan)
    supervisor = Multiprocess(_config(WORKER_APP, plan, workers), sockets=[listening])
    supervisor.run()
    if any(worker.exitcode == STARTUP_FAILURE for worker in supervisor.processes):
        return _not_started()
    return exit_status.SUCCESS


def _config(app: Starlette | str, plan: Mapping[str, Any], workers: int = 1) -> Any:
    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    grace = settings_of(plan["settings"], os.environ).grace_seconds
    # The server's own lines (a run's failure, with its id) beside uvicorn's, formatted alike.
    logging = {**LOGGING_CONFIG, "loggers": {**LOGGING_CONFIG["loggers"]}}
    logging["loggers"]["chainkit"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return uvicorn.Config(
        app,
        factory=isinstance(app, str),
        workers=workers,
        log_config=logging,
        timeout_graceful_shutdown=math.ceil(grace),
    )


@contextmanager
def _stopped_quietly() -> Iterator[None]:
    """uvicorn, once it has shut down for SIGTERM or SIGINT, raises the signal again for the
    handler it found: this one ignores it, so that a stop asked for ends with status 0
    rather than the signal's (SIGTERM would kill the process, SIGINT raise Ctrl-C)."""
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {stop: signal.signal(stop, signal.SIG_IGN) for stop in stops}
    try:
        yield
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)


def _not_started() -> int:
    stderr.error(COMMAND, "the server did not start (uvicorn's lines above say why)")
    return exit_status.FAILED
