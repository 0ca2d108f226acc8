"""Factories for `chainkit serve tests.support.serve_factories:…` in a process of its own.

The held chains answer only once the test lets them: each run writes `started-<pid>-<n>` in
the folder CHAINKIT_TEST_HELD_DIR names, then waits for the file `release` there, and answers
with the process's id. `held_awaiting` waits as a well-behaved step does, its event loop free;
`held_blocking` holds its process's event loop, so that the process accepts no other
connection meanwhile (the next one must go to another worker)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from pathlib import Path

from chainkit import agents, chains, checkpoints, memory, prompts
from chainkit._cli.agent import builtin_agent

HELD_DIR = "CHAINKIT_TEST_HELD_DIR"
HOLD_SECONDS = 60.0


def _held_dir() -> Path:
    return Path(os.environ[HELD_DIR])


def _mark_started(text: str) -> Path:
    folder = _held_dir()
    (folder / f"started-{os.getpid()}-{len(list(folder.glob('started-*')))}").write_text(text)
    return folder / "release"


def _answer(text: str) -> str:
    return f"{text} from {os.getpid()}"


async def _wait_awaiting(text: str) -> str:
    release = _mark_started(text)
    deadline = time.monotonic() + HOLD_SECONDS
    while not release.exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return _answer(text)


async def _wait_blocking(text: str) -> str:
    release = _mark_started(text)
    deadline = time.monotonic() + HOLD_SECONDS
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.01)  # the event loop waits too: on purpose
    return _answer(text)


def held_awaiting() -> chains.Chain:
    return chains.pipe(_wait_awaiting)


def held_blocking() -> chains.Chain:
    return chains.pipe(_wait_blocking)


def pid_of_the_server() -> chains.Chain:
    """Answers with the id of the process that ran it."""
    return chains.pipe(lambda text: f"{text} from {os.getpid()}")


def counting_chat() -> chains.WithHistory:
    """Answers with how many messages its prompt holds: the session's, kept in SQLite in
    CHAINKIT_TEST_HELD_DIR, and the new one."""
    prompt = prompts.ChatPromptTemplate(
        [prompts.MessagesPlaceholder("history"), ("user", "{input}")]
    )
    history = memory.SQLHistory(_held_dir() / "history.db")
    return chains.with_history(prompt | (lambda messages: f"{len(messages)} messages"), history)


def make_number() -> int:
    return 7


def broken() -> chains.Chain:
    raise RuntimeError("no model configured")


def fails_in_workers() -> agents.Executor:
    """Builds the agent in `chainkit serve`'s own process, and fails in its workers."""
    if multiprocessing.parent_process() is not None:  # a worker of chainkit serve
        raise ConnectionError("the database went away")
    return builtin_agent()


def checkpointed_agent() -> agents.Executor:
    executor = builtin_agent()
    executor.checkpointer = checkpoints.SQLiteStore("runs-of-the-factory.db")
    return executor
