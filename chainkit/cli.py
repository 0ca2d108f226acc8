"""The `chainkit` command: `chainkit run "question"` runs a MRKL agent over the built-in tools.

It says what is going on and what to do next: a line on stderr per retried model call, a
hint after an error a flag can fix, one line when interrupted, and nothing when the reader of
its output goes away.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sys
from collections.abc import Sequence
from contextlib import suppress

from chainkit import __version__
from chainkit._batch import command as batch_command
from chainkit._redact import redact
from chainkit._text import shorten
from chainkit.callbacks import Handler, trace_command
from chainkit.llms import Model
from chainkit.llms._retry import DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT
from chainkit.llms.errors import ModelStatusError
from chainkit.tools._mcp import command as mcp_serve

OFFLINE_NOTICE = (
    "chainkit: using the built-in offline model (a keyword matcher, not an LLM). To use a real "
    "model, set OPENAI_API_KEY (and optionally OPENAI_MODEL), or OPENAI_BASE_URL for a local "
    "OpenAI-compatible server such as vLLM, Ollama or llama.cpp."
)
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left
EXIT_INTERRUPTED = 130  # 128 + SIGINT
_ENDPOINT_OPTIONS = ("model", "timeout", "max_attempts")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chainkit", description="Run a chainkit agent from the command line."
    )
    parser.add_argument("--version", action="version", version=f"chainkit {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run",
        help="answer a question with a MRKL agent over the built-in tools",
        usage=(
            "chainkit run [-h] [-v] [--max-iterations N] [--model MODEL] [--base-url URL] "
            "[--timeout SECONDS] [--max-attempts N] [--trace FILE] [--] QUESTION"
        ),
        description=(
            "Answer QUESTION with a OneShotAgent over the calculator, random number and current "
            "time tools. Uses an OpenAI-compatible server when OPENAI_API_KEY or "
            "OPENAI_BASE_URL is set (or --base-url is given), else the built-in offline model."
        ),
    )
    # Optional here so that a question starting with "-" gets its own error, not "required".
    run.add_argument(
        "question",
        nargs="?",
        type=_question,
        metavar="QUESTION",
        help="the question to answer, in quotes; after -- if it starts with -",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="trace each step on stderr")
    run.add_argument(
        "--max-iterations",
        type=_positive,
        default=5,
        metavar="N",
        help="step limit, at least 1 (default 5)",
    )
    run.add_argument(
        "--model", type=_not_empty, help="model name (default: $OPENAI_MODEL or gpt-4o-mini)"
    )
    run.add_argument(
        "--base-url",
        type=_not_empty,
        metavar="URL",
        help="OpenAI-compatible server, e.g. http://localhost:8000/v1 (default: $OPENAI_BASE_URL)",
    )
    run.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help=f"seconds each attempt to call the model may take (default {DEFAULT_TIMEOUT:g})",
    )
    run.add_argument(
        "--max-attempts",
        type=_positive,
        metavar="N",
        help=(
            "attempts per model call, the first included; 1 means no retries "
            f"(default {DEFAULT_MAX_ATTEMPTS})"
        ),
    )
    run.add_argument(
        "--trace",
        metavar="FILE",
        help="append every event of the run to FILE as JSON lines (see chainkit trace FILE)",
    )
    mcp_serve.add_command(commands)
    batch_command.add_command(commands)
    trace_command.add_command(commands)
    return parser


def _question(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the question is empty")
    try:
        text.encode()
    except UnicodeEncodeError as error:
        # Bytes that are not UTF-8 reach argv as lone surrogates, which no model can read.
        raise argparse.ArgumentTypeError(
            f"the question is not valid UTF-8 text (at character {error.start + 1})"
        ) from None
    return text


def _not_empty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty")
    return text


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"must be a finite number of seconds, more than zero, got {text!r}"
        )
    return value


def _endpoint_configured(args: argparse.Namespace) -> bool:
    return bool(
        args.base_url or os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")
    )


def _model(args: argparse.Namespace) -> Model:
    """An OpenAI-compatible endpoint when one is configured, else the offline model."""
    if _endpoint_configured(args):
        from chainkit.llms.openai.chat import OpenAI

        settings = {
            name: value
            for name in ("timeout", "max_attempts")
            if (value := getattr(args, name)) is not None
        }
        return OpenAI(args.model, base_url=args.base_url, **settings)
    from chainkit.llms import OfflineModel

    return OfflineModel()


def _tell(line: str) -> None:
    """Writes `line` for the user on stderr. A closed or broken stderr loses the line, not the
    answer on stdout (and with stderr closed at start, print would send it to stdout)."""
    if sys.stderr is None:
        return
    with suppress(OSError):
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


class _RetryNotice(Handler):
    """One line on stderr per retried model call: which attempt failed, why, and how long
    until the next."""

    def __init__(self, max_attempts: int) -> None:
        self.max_attempts = max_attempts

    def handle_retry(self, attempt: int, error: BaseException, wait_seconds: float) -> None:
        why = shorten(" ".join(f"{type(error).__name__}: {error}".split()), 300)
        line = (
            f"chainkit: attempt {attempt} of {self.max_attempts} failed ({why}); "
            f"retrying in {wait_seconds:.1f} s"
        )
        asked = error.retry_after if isinstance(error, ModelStatusError) else None
        if asked is not None:
            capped = f", capped at {wait_seconds:.1f} s" if asked > wait_seconds else ""
            line += f" (the server asked for {asked:.1f} s{capped})"
        _tell(redact(line))


def _run(args: argparse.Namespace, model: Model) -> str:
    from chainkit import agents, callbacks, chains, tools

    handler: Handler | None = None
    if args.verbose:
        handler = callbacks.LogHandler() if sys.stderr is not None else None
    else:
        policy = getattr(model, "retry_policy", None)
        if policy is not None:
            handler = _RetryNotice(policy.max_attempts)
    agent = agents.OneShotAgent(
        model, [tools.Calculator(), tools.RandomNumber(), tools.CurrentTime()]
    )
    executor = agents.Executor(
        agent,
        max_iterations=args.max_iterations,
        callbacks=handler,
        error_handler=agents.ParserErrorHandler(),
    )
    if args.trace is None:
        return chains.run(executor, args.question)
    with callbacks.TraceFile(args.trace) as trace:
        return chains.run(executor, args.question, callbacks=trace)


def _hint(error: Exception, args: argparse.Namespace) -> str | None:
    """What the user can do about `error`, when a flag or a setting can fix it."""
    from chainkit.agents import NotFinishedError
    from chainkit.llms.errors import ModelConnectionError, ModelTimeoutError

    if isinstance(error, NotFinishedError):
        return f"allow more steps with --max-iterations {args.max_iterations * 2}"
    if isinstance(error, ModelTimeoutError):
        return "allow more time with --timeout SECONDS, or more attempts with --max-attempts N"
    if isinstance(error, ModelConnectionError):
        return (
            "is the server running and reachable? Its address comes from --base-url or "
            "OPENAI_BASE_URL"
        )
    if isinstance(error, ModelStatusError):
        if error.status_code in (401, 403):
            return "check the API key in OPENAI_API_KEY"
        if error.status_code == 404:
            return "check --model, and --base-url (an OpenAI-compatible URL usually ends in /v1)"
        if error.retries_exhausted:
            return "the server is busy or failing: try later, or allow more with --max-attempts N"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader of stdout (or stderr) went away, as `| head` does: nothing is left to
        # say. Both go to /dev/null so that flushing them at exit raises nothing either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):  # not a real file, as under a test's capture
                os.dup2(devnull, stream.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        _tell("chainkit: interrupted")
        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if args.command == "mcp-serve":
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return mcp_serve.run_command(args)
    if args.command == "batch":
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return batch_command.run_command(args, parser)
    if args.command == "trace":
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return trace_command.run_command(args)
    if extra:
        if args.question is None and len(extra) == 1 and extra[0].startswith("-"):
            parser.error(
                "a question that starts with '-' goes after '--', as in: "
                f"chainkit run -- {shlex.quote(extra[0])}"
            )
        if args.question is not None and not any(word.startswith("-") for word in extra):
            words = shlex.quote(" ".join((args.question, *extra)))
            parser.error(f"a question of several words goes in quotes, as in: chainkit run {words}")
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.question is None:
        parser.error("the following arguments are required: question")
    if not _endpoint_configured(args):
        given = [name for name in _ENDPOINT_OPTIONS if getattr(args, name) is not None]
        if given:
            flag = "--" + given[0].replace("_", "-")
            parser.error(
                f"{flag} {getattr(args, given[0])} needs an OpenAI-compatible endpoint: set "
                "OPENAI_API_KEY, or OPENAI_BASE_URL or --base-url for a local server"
            )
    try:
        model = _model(args)
    except (TypeError, ValueError) as error:  # a malformed --base-url, OPENAI_BASE_URL or key
        parser.error(redact(str(error)))
    from chainkit.llms import OfflineModel

    if isinstance(model, OfflineModel):
        _tell(OFFLINE_NOTICE)
    try:
        answer = _run(args, model)
    except Exception as error:
        _tell(redact(f"chainkit: error: {type(error).__name__}: {error}"))
        hint = _hint(error, args)
        if hint is not None:
            _tell(f"chainkit: hint: {hint}")
        return 1
    print(answer, flush=True)
    return 0
