"""`chainkit run "question"`: a MRKL agent over the built-in tools answers the question.

It says what is going on and what to do next: a line on stderr per retried model call, a
hint after an error a flag can fix, and the built-in offline model named when it is used.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import TYPE_CHECKING

from chainkit._cli import exit_status, stderr
from chainkit._cli.arguments import not_empty, positive, prices, seconds
from chainkit._redact import redact
from chainkit._text import shorten
from chainkit.callbacks import Handler
from chainkit.llms.errors import ModelStatusError
from chainkit.llms.retry import DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from chainkit.agents import Executor
    from chainkit.agents.approval import Approver
    from chainkit.llms import Model

OFFLINE_NOTICE = (
    "using the built-in offline model (a keyword matcher, not an LLM). To use a real "
    "model, set OPENAI_API_KEY (and optionally OPENAI_MODEL), or OPENAI_BASE_URL for a local "
    "OpenAI-compatible server such as vLLM, Ollama or llama.cpp."
)
COMMAND = "run"
_ENDPOINT_OPTIONS = ("model", "timeout", "max_attempts", "constrain")


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `run` to the `chainkit` command's subcommands."""
    run = commands.add_parser(
        COMMAND,
        help="answer a question with a MRKL agent over the built-in tools",
        usage=(
            "chainkit run [-h] [-v] [--max-iterations N] [--model MODEL] [--base-url URL] "
            "[--timeout SECONDS] [--max-attempts N] [--constrain FIELD] [--trace FILE] "
            "[--prices JSON] [--approve] [--] QUESTION"
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
        type=positive,
        default=5,
        metavar="N",
        help="step limit, at least 1 (default 5)",
    )
    run.add_argument(
        "--model", type=not_empty, help="model name (default: $OPENAI_MODEL or gpt-4o-mini)"
    )
    run.add_argument(
        "--base-url",
        type=not_empty,
        metavar="URL",
        help="OpenAI-compatible server, e.g. http://localhost:8000/v1 (default: $OPENAI_BASE_URL)",
    )
    run.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help=f"seconds each attempt to call the model may take (default {DEFAULT_TIMEOUT:g})",
    )
    run.add_argument(
        "--max-attempts",
        type=positive,
        metavar="N",
        help=(
            "attempts per model call, the first included; 1 means no retries "
            f"(default {DEFAULT_MAX_ATTEMPTS})"
        ),
    )
    run.add_argument(
        "--constrain",
        type=not_empty,
        metavar="FIELD",
        help=(
            "constrain each reply to the agent's format with a grammar, sent in the request "
            "field FIELD the server takes: grammar for llama.cpp's server, "
            "structured_outputs.grammar for vLLM (default: decoding is free)"
        ),
    )
    run.add_argument(
        "--trace",
        metavar="FILE",
        help="append every event of the run to FILE as JSON lines (see chainkit trace FILE)",
    )
    run.add_argument(
        "--prices",
        type=prices,
        metavar="JSON",
        help=(
            "prices per million tokens in and out by model, e.g. "
            "'{\"gpt-4o-mini\": [0.15, 0.6]}': the run's cost is shown with its token usage "
            "(which -v shows too)"
        ),
    )
    run.add_argument(
        "--approve",
        action="store_true",
        help=(
            "ask on the terminal before each tool call: y runs it, n denies it with a reason "
            "the model reads, e runs it on arguments you type as JSON (a JSON string for a "
            "tool taking text); the end of input stops the run"
        ),
    )


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


def misplaced(args: argparse.Namespace, extra: list[str]) -> str | None:
    """What went wrong when words are left over after the question, if a way to write them
    can be shown: a question starting with "-", or one of several words not in quotes."""
    if args.question is None and len(extra) == 1 and extra[0].startswith("-"):
        return (
            "a question that starts with '-' goes after '--', as in: "
            f"chainkit run -- {shlex.quote(extra[0])}"
        )
    if args.question is not None and not any(word.startswith("-") for word in extra):
        words = shlex.quote(" ".join((args.question, *extra)))
        return f"a question of several words goes in quotes, as in: chainkit run {words}"
    return None


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Runs `chainkit run`; the exit status."""
    if args.question is None:
        parser.error("the following arguments are required: question")
    _check_endpoint_options(args, parser)
    try:
        model = _model(args)
    except (TypeError, ValueError) as error:  # a malformed --base-url, OPENAI_BASE_URL or key
        parser.error(redact(str(error)))
    from chainkit.llms import OfflineModel

    if isinstance(model, OfflineModel):
        stderr.tell("", OFFLINE_NOTICE)
    from chainkit.agents.errors import AgentConfigError

    try:
        executor = _executor(args, model)
    except AgentConfigError as error:  # a --constrain that names no request field
        parser.error(f"--constrain: {error}")
    try:
        answer = _answer(args, executor)
    except Exception as error:
        stderr.failure("", error)
        hint = _hint(error, args)
        if hint is not None:
            stderr.tell("", f"hint: {hint}")
        return exit_status.FAILED
    print(answer, flush=True)
    return exit_status.SUCCESS


def _endpoint_configured(args: argparse.Namespace) -> bool:
    return bool(
        args.base_url or os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")
    )


def _check_endpoint_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Usage error for a flag that only a real model reads, given for the offline one."""
    if _endpoint_configured(args):
        return
    given = [name for name in _ENDPOINT_OPTIONS if getattr(args, name) is not None]
    if given:
        flag = "--" + given[0].replace("_", "-")
        parser.error(
            f"{flag} {getattr(args, given[0])} needs an OpenAI-compatible endpoint: set "
            "OPENAI_API_KEY, or OPENAI_BASE_URL or --base-url for a local server"
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


class _RetryNotice(Handler):
    """One line on stderr per retried model call: which attempt failed, why, and how long
    until the next."""

    def __init__(self, max_attempts: int) -> None:
        self.max_attempts = max_attempts

    def handle_retry(
        self, attempt: int, error: BaseException, wait_seconds: float, discarded: str
    ) -> None:
        why = shorten(" ".join(f"{type(error).__name__}: {error}".split()), 300)
        line = (
            f"attempt {attempt} of {self.max_attempts} failed ({why}); "
            f"retrying in {wait_seconds:.1f} s"
        )
        asked = error.retry_after if isinstance(error, ModelStatusError) else None
        if asked is not None:
            capped = f", capped at {wait_seconds:.1f} s" if asked > wait_seconds else ""
            line += f" (the server asked for {asked:.1f} s{capped})"
        stderr.tell("", line)


def _handler(args: argparse.Namespace, model: Model) -> Handler | None:
    """What reports the run on stderr: every step with -v, else each retried model call."""
    from chainkit import callbacks

    if args.verbose:
        return callbacks.LogHandler() if sys.stderr is not None else None
    policy = getattr(model, "retry_policy", None)
    return None if policy is None else _RetryNotice(policy.max_attempts)


def _executor(args: argparse.Namespace, model: Model) -> Executor:
    """The built-in agent on `model`, as the flags set it up."""
    from chainkit._cli.agent import builtin_agent

    approve: Approver | None = None
    if args.approve:
        from chainkit._cli.approve import ask_at_terminal as approve
    return builtin_agent(
        model,
        max_iterations=args.max_iterations,
        callbacks=_handler(args, model),
        approve=approve,
        constrain=args.constrain,
    )


def _answer(args: argparse.Namespace, executor: Executor) -> str:
    from chainkit import callbacks, chains

    shown = args.verbose or args.prices is not None
    totals = callbacks.UsageTotals(args.prices) if shown else None
    heard: list[Handler] = [] if totals is None else [totals]
    try:
        if args.trace is None:
            return chains.run(executor, args.question, callbacks=heard or None)
        with callbacks.TraceFile(args.trace) as trace:
            return chains.run(executor, args.question, callbacks=[*heard, trace])
    finally:  # a failed run's tokens were spent all the same
        if totals is not None:
            for line in totals.summary().splitlines():
                stderr.tell("", f"usage: {line}")


def _hint(error: Exception, args: argparse.Namespace) -> str | None:
    """What the user can do about `error`, when a flag or a setting can fix it."""
    from chainkit.agents import ConstraintRefusedError, NotFinishedError
    from chainkit.llms.errors import ModelConnectionError, ModelTimeoutError

    if isinstance(error, ConstraintRefusedError):
        return (
            f"{_server(args)} does not take a grammar in {args.constrain!r}: "
            "leave out --constrain, or give the field it takes (--constrain grammar for "
            "llama.cpp's server, --constrain structured_outputs.grammar for vLLM)"
        )
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


def _server(args: argparse.Namespace) -> str:
    """Where the run's model calls go, as the user gave it."""
    address = args.base_url or os.environ.get("OPENAI_BASE_URL")
    return "the OpenAI API" if address is None else f"the server at {redact(address)}"
