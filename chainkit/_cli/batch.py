"""`chainkit batch INPUT.jsonl -o OUTPUT.jsonl`: run a chain over every line of a file.

The chain comes from `--agent module:factory` (a function returning an Executor or any
Chain), by default the built-in offline agent of `chainkit run`. The job is resumable: the
same command run again skips the ids the output holds. `--engine ray` places the runs on a
Ray cluster (chainkit.distributed, which imports ray, is loaded only then).

Exit statuses: 0 every run succeeded; 1 some failed, or the job could not run; 2 a usage
error; 74 (EX_IOERR) a result could not be written, which stops the job at once; 130
interrupted (Ctrl-C); 143 terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import ModuleType
from typing import TYPE_CHECKING

from chainkit._cli import agent, exit_status, stderr
from chainkit._cli.arguments import json_object, positive, prices

if TYPE_CHECKING:
    from chainkit._batch.job import BatchJob
    from chainkit.chains import Chain

COMMAND = "batch"
DEFAULT_CONCURRENCY = 8


class _Terminated(Exception):
    """The job was sent SIGTERM."""


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `batch` to the `chainkit` command's subcommands."""
    command = commands.add_parser(
        COMMAND,
        help="run a chain over each line of a JSONL file, resumably",
        usage=(
            "chainkit batch [-h] -o OUTPUT.jsonl [--concurrency N] [--agent module:factory] "
            "[--engine {local,ray}] [--ray-address ADDRESS] [--progress] [--retry-failed] "
            "[--prices JSON] [--checkpoint RUNS.db] INPUT.jsonl"
        ),
        description=(
            'Run a chain on each line of INPUT.jsonl, a JSON object such as {"id": 7, '
            '"input": "What is 2 + 2?"} (a line without an id is named by its line number: '
            '"id": null, "line": N), and append one result line per run to OUTPUT.jsonl: id, '
            "output or error, steps, usage (summed, and by model), seconds; the summary adds "
            "up the usage by model. Run the same command again to go on after "
            "an interruption: runs already in OUTPUT.jsonl are skipped. Exit status: 0 all "
            "succeeded, 1 some failed, 2 usage error, 74 a result could not be written, 130 "
            "interrupted, 143 terminated."
        ),
    )
    command.add_argument("input", metavar="INPUT.jsonl", help="the records to run")
    command.add_argument(
        "-o", "--output", required=True, metavar="OUTPUT.jsonl", help="where results go"
    )
    command.add_argument(
        "--concurrency",
        type=positive,
        default=DEFAULT_CONCURRENCY,
        metavar="N",
        help=f"runs at once (per Ray actor with --engine ray; default {DEFAULT_CONCURRENCY})",
    )
    command.add_argument(
        "--agent",
        metavar="module:factory",
        help="a function returning the chain to run (default: the built-in offline agent)",
    )
    command.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="run here (default), or on a Ray cluster",
    )
    command.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="an existing Ray cluster, e.g. ray://head:10001 (default: start Ray locally)",
    )
    command.add_argument(
        "--ray-runtime-env",
        type=json_object,
        metavar="JSON",
        help='what Ray workers need, e.g. \'{"pip": ["chainkit"], "working_dir": "."}\'',
    )
    command.add_argument(
        "--actors",
        type=positive,
        metavar="N",
        help="Ray actors, each building its own chain (default: one per CPU of the cluster)",
    )
    command.add_argument(
        "--progress",
        action="store_true",
        help="show the progress line even when stderr is not a terminal",
    )
    command.add_argument(
        "--retry-failed",
        action="store_true",
        help="run again the runs OUTPUT.jsonl holds as failed (their lines are replaced)",
    )
    command.add_argument(
        "--checkpoint",
        metavar="RUNS.db",
        help=(
            "save each run's steps in this SQLite file (or PostgreSQL, at a postgresql:// URL): "
            "run the same command again after a crash and the runs that were in flight go on "
            "from their last step"
        ),
    )
    command.add_argument(
        "--prices",
        type=prices,
        metavar="JSON",
        help=(
            "prices per million tokens in and out by model, e.g. "
            "'{\"gpt-4o-mini\": [0.15, 0.6]}': the summary shows the cost of the job's runs"
        ),
    )


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Runs `chainkit batch`; its exit status (see the module's)."""
    from chainkit._batch.job import BatchJob
    from chainkit._batch.runner import chain_of, inputs_needed
    from chainkit._errors import FactoryError
    from chainkit._factory import load
    from chainkit._progress import stderr_is_terminal

    _check_usage(args, parser)
    spec = args.agent or agent.SPEC
    distributed: ModuleType | None = None
    if args.engine == "ray":
        try:
            from chainkit import distributed as ray_engine
        except ModuleNotFoundError as error:
            if (error.name or "").partition(".")[0] != "ray":
                raise
            stderr.error(COMMAND, "--engine ray needs the ray package: pip install 'chainkit[ray]'")
            return exit_status.FAILED
        # Before the factory runs: a rate limiter it makes belongs to this cluster.
        ray_engine.connect(args.ray_address, args.ray_runtime_env)
        distributed = ray_engine
    try:
        if args.agent is None:
            stderr.tell(
                COMMAND, "using the built-in offline agent; --agent module:factory runs yours"
            )
        chain = chain_of(load(spec, "mypackage.agents:make_agent"), spec)
    except FactoryError as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.USAGE
    except Exception as failed:
        stderr.error(
            COMMAND, f"{spec} failed to build the chain: {type(failed).__name__}: {failed}"
        )
        return exit_status.FAILED
    if args.checkpoint is not None:
        unfit = _checkpointing(chain, args)
        if unfit:
            stderr.error(COMMAND, unfit)
            return exit_status.USAGE
    if chain.memory is not None:
        stderr.tell(
            COMMAND,
            f"warning: the chain of {spec} has a memory, which every run reads and adds to: "
            "runs are not independent",
        )
    progress = args.progress or stderr_is_terminal()
    try:
        job = BatchJob(
            args.input,
            args.output,
            inputs_needed(chain),
            progress=progress,
            retry_failed=args.retry_failed,
            prices=args.prices,
        )
    except OSError as unopened:  # an output that cannot be opened, or locked by another job
        stderr.error(COMMAND, str(unopened))
        return exit_status.FAILED
    return _run(job, chain, spec, distributed, args)


def _checkpointing(chain: Chain, args: argparse.Namespace) -> str:
    """Gives the chain the --checkpoint store; what refuses it, if anything."""
    from chainkit._cli.runs import open_store
    from chainkit.agents import Executor

    if args.engine == "ray":
        return "--checkpoint runs the job here: it does not go with --engine ray"
    if not isinstance(chain, Executor):
        return f"--checkpoint needs an agents.Executor; {args.agent} gave {type(chain).__name__}"
    chain.checkpointer = open_store(args.checkpoint)
    return ""


def _check_usage(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Usage error for Ray flags without Ray, and for an input or output file that cannot be."""
    if args.engine != "ray":
        for flag in ("ray_address", "ray_runtime_env", "actors"):
            if getattr(args, flag) is not None:
                parser.error(f"--{flag.replace('_', '-')} needs --engine ray")
    if not os.path.exists(args.input):
        parser.error(f"{args.input}: no such file")
    if not os.path.isfile(args.input):
        parser.error(f"{args.input} is not a file")
    if os.path.exists(args.output) and os.path.samefile(args.input, args.output):
        parser.error("the output file must not be the input file")


def _run(
    job: BatchJob,
    chain: Chain,
    spec: str,
    distributed: ModuleType | None,
    args: argparse.Namespace,
) -> int:
    """Runs the job, sums it up and gives the exit status."""
    from chainkit._errors import OutputWriteError

    try:
        if distributed is not None:
            with _sigterm_raises():
                distributed.run_job(job, spec, args.concurrency, args.actors)
        else:
            import asyncio

            asyncio.run(_run_here(job, chain, args.concurrency, args.checkpoint is not None))
        job.close()
    except OutputWriteError as unwritten:
        job.close(summary=False)
        stderr.error(COMMAND, str(unwritten))
        return exit_status.WRITE_FAILED
    except KeyboardInterrupt:
        return _stopped(job, "interrupted", exit_status.INTERRUPTED)
    except _Terminated:
        return _stopped(job, "terminated (SIGTERM)", exit_status.TERMINATED)
    except Exception as failed:
        _stopped(job, "stopped", exit_status.FAILED)
        stderr.failure(COMMAND, failed)
        return exit_status.FAILED
    if job.failed or job.failed_before:
        stderr.tell(
            COMMAND,
            "some runs failed: their errors are in the output; --retry-failed runs them again",
        )
        return exit_status.FAILED
    return exit_status.SUCCESS


async def _run_here(job: BatchJob, chain: Chain, concurrency: int, checkpointed: bool) -> None:
    """The local engine: runs in this process's event loop, where SIGTERM cancels the job as
    Ctrl-C does (then raising _Terminated)."""
    import asyncio

    from chainkit._batch.runner import run_all

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    terminated: list[bool] = []

    def terminate() -> None:
        terminated.append(True)
        if task is not None:
            task.cancel()

    # Not on Windows, nor outside the main thread: SIGTERM ends the process there.
    with suppress(NotImplementedError, ValueError, RuntimeError):
        loop.add_signal_handler(signal.SIGTERM, terminate)
    try:
        identity = job.identity if checkpointed else None
        await run_all(chain, job.pending(), concurrency, job.finish, checkpoint_job=identity)
    except asyncio.CancelledError:
        if terminated:
            raise _Terminated from None
        raise
    finally:
        with suppress(NotImplementedError, ValueError, RuntimeError):
            loop.remove_signal_handler(signal.SIGTERM)


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises _Terminated, as Ctrl-C raises KeyboardInterrupt, while in the block
    (where signals can be handled: in the main thread)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(number: int, frame: object) -> None:
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stopped(job: BatchJob, how: str, status: int) -> int:
    """Closes a job stopped early, saying how to go on; `status`, or WRITE_FAILED if its last
    lines cannot be made durable."""
    from chainkit._errors import OutputWriteError

    try:
        job.close(stopped=how)
    except OutputWriteError as unwritten:
        stderr.error(COMMAND, str(unwritten))
        return exit_status.WRITE_FAILED
    return status
