"""What a child process does to a SQLHistory, for tests/memory/test_sql_history.py: functions
run by tests/support/forked.py (importable, their results JSON)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from chainkit import memory
from chainkit.schema import Message


def tagged_append(tag: str, number: int) -> list[Message]:
    """One append of three messages, each naming its writer and its place."""
    return [
        Message.user(f"{tag} {number} q"),
        Message.assistant(f"{tag} {number} a"),
        Message.user(f"{tag} {number} end"),
    ]


def append_many(where: str, session: str, tag: str, count: int, go: str) -> int:
    """`count` appends to `session`, as fast as they go once the file `go` exists (so that
    the processes' appends overlap); how many returned."""
    history = memory.SQLHistory(where)
    deadline = time.monotonic() + 60
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.001)
    for number in range(count):
        history.append(session, tagged_append(tag, number))
    history.close()
    return count


def append_until_killed(where: str, session: str, acknowledged: str) -> None:
    """Appends for ever, writing each append's number to `acknowledged` once it returned."""
    history = memory.SQLHistory(where)
    with Path(acknowledged).open("a", encoding="utf-8") as log:
        number = 0
        while True:
            history.append(session, tagged_append("killed", number))
            log.write(f"{number}\n")
            log.flush()
            os.fsync(log.fileno())
            number += 1
