"""What a chat history costs a conversation's turn: `SQLHistory` on a SQLite file (and on
PostgreSQL when a DSN is given), against `InMemoryHistory`. Run:

    python bench/bench_history.py [--repeat N] [--postgres DSN]

A session of 100 messages (user and assistant turns of a few sentences, every fifth assistant
message with a tool call and its result) is measured three ways, each the median of N tries
on a fresh session: `append` of the 100 messages in one call, then `messages` of the session
(the issue's "append + load of a 100-message session", target <= 1 ms with SQLite); one
turn on it (append a user and an assistant message, load the 102); and `messages(last=10)`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit import memory
from chainkit.schema import FunctionCall, Message, ToolCall

SENTENCE = "The order ships from the Lyon warehouse on Tuesday and arrives within three days. "


def conversation(count: int) -> list[Message]:
    messages: list[Message] = []
    while len(messages) < count:
        turn = len(messages)
        messages.append(Message.user(f"Question {turn}: {SENTENCE * 2}"))
        if turn % 10 == 8:
            call = ToolCall(f"call_{turn}", FunctionCall("lookup", '{"order": "A-17"}'))
            messages.append(Message.assistant("", [call]))
            messages.append(Message.tool(SENTENCE, f"call_{turn}", "lookup"))
        messages.append(Message.assistant(f"Answer {turn}: {SENTENCE * 3}"))
    return messages[:count]


def median_ms(work: Callable[[str], object], prepare: Callable[[str], None], repeat: int) -> float:
    times = []
    for n in range(repeat):
        session = f"bench-{os.getpid()}-{time.monotonic_ns()}-{n}"
        prepare(session)
        start = time.perf_counter()
        work(session)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(name: str, history: memory.ChatHistory, repeat: int) -> None:
    messages = conversation(100)
    turn = [Message.user(SENTENCE), Message.assistant(SENTENCE)]

    def nothing(session: str) -> None:
        return None

    def filled(session: str) -> None:
        history.append(session, messages)

    def append_and_load(session: str) -> object:
        history.append(session, messages)
        return history.messages(session)

    def one_turn(session: str) -> object:
        history.append(session, turn)
        return history.messages(session)

    def recent(session: str) -> object:
        return history.messages(session, last=10)

    print(
        f"{name}: append 100 + load 100 {median_ms(append_and_load, nothing, repeat):.3f} ms; "
        f"a turn (append 2 + load 102) {median_ms(one_turn, filled, repeat):.3f} ms; "
        f"load last 10 {median_ms(recent, filled, repeat):.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--postgres", default=os.environ.get("CHAINKIT_TEST_POSTGRES_DSN"))
    args = parser.parse_args()
    measure("InMemoryHistory", memory.InMemoryHistory(), args.repeat)
    with tempfile.TemporaryDirectory() as folder:
        sqlite = memory.SQLHistory(Path(folder) / "history.db")
        measure("SQLHistory, SQLite (synchronous=NORMAL)", sqlite, args.repeat)
        sqlite.close()
    if args.postgres:
        postgres = memory.SQLHistory(args.postgres)
        measure("SQLHistory, PostgreSQL", postgres, args.repeat)
        for session in postgres.sessions():
            if session.startswith(f"bench-{os.getpid()}-"):
                postgres.clear(session)
        postgres.close()


if __name__ == "__main__":
    main()
