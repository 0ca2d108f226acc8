"""The `chainkit` command: `chainkit run "question"` runs a MRKL agent over the built-in tools."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from chainkit import __version__
from chainkit.llms import Model
from chainkit.tools._mcp import command as mcp_serve


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chainkit", description="Run a chainkit agent from the command line."
    )
    parser.add_argument("--version", action="version", version=f"chainkit {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run",
        help="answer a question with a MRKL agent over the built-in tools",
        description=(
            "Answer QUESTION with a OneShotAgent over the calculator, random number and current "
            "time tools. Uses an OpenAI-compatible server when OPENAI_API_KEY or "
            "OPENAI_BASE_URL is set (or --base-url is given), else the built-in offline model."
        ),
    )
    run.add_argument("question", type=_question, help="the question to answer")
    run.add_argument("-v", "--verbose", action="store_true", help="trace each step on stderr")
    run.add_argument(
        "--max-iterations", type=_positive, default=5, help="step limit, at least 1 (default 5)"
    )
    run.add_argument("--model", help="model name (default: $OPENAI_MODEL or gpt-4o-mini)")
    run.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    mcp_serve.add_command(commands)
    return parser


def _question(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the question is empty")
    return text


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _endpoint_configured(args: argparse.Namespace) -> bool:
    return bool(
        args.base_url or os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")
    )


def _model(args: argparse.Namespace) -> Model:
    """An OpenAI-compatible endpoint when one is configured, else the offline model."""
    if _endpoint_configured(args):
        from chainkit.llms.openai import OpenAI

        return OpenAI(args.model, base_url=args.base_url)
    from chainkit.llms import OfflineModel

    return OfflineModel()


def _run(args: argparse.Namespace) -> str:
    from chainkit import agents, callbacks, chains, tools

    agent = agents.OneShotAgent(
        _model(args), [tools.Calculator(), tools.RandomNumber(), tools.CurrentTime()]
    )
    executor = agents.Executor(
        agent,
        max_iterations=args.max_iterations,
        callbacks_handler=callbacks.LogHandler() if args.verbose else None,
        error_handler=agents.ParserErrorHandler(),
    )
    return chains.run(executor, args.question)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "mcp-serve":
        return mcp_serve.run_command(args)
    if args.model and not _endpoint_configured(args):
        parser.error(
            f"--model {args.model} needs an OpenAI-compatible endpoint: set OPENAI_API_KEY, "
            "or OPENAI_BASE_URL or --base-url for a local server"
        )
    try:
        print(_run(args))
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        from chainkit._redact import redact

        print(redact(f"chainkit: error: {type(error).__name__}: {error}"), file=sys.stderr)
        return 1
    return 0
