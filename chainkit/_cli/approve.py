"""`chainkit run --approve`: a person at the terminal decides each tool call.

Each call is shown on stderr (the tool and its arguments, control characters escaped so a
model's text cannot drive the terminal), then one question is asked: `y` runs it, `n` denies it
after asking for a reason (the model reads it), `e` asks for new arguments as JSON (a JSON
string for a tool taking text) and runs the tool on them. An answer that is none of these, or
arguments that are not JSON, asks again. A tool's question (`agents.interrupt`) is shown
the same way and answered with one line: JSON when it reads as JSON, else the text. The end of
input (Ctrl-D) stops the run.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from chainkit._cli import stderr
from chainkit._text import one_line, visible

if TYPE_CHECKING:
    from chainkit.agents import ApprovalRequest, Approve, Deny, Edit, InputRequest

_SHOWN = 2000
"""How many characters of a call's arguments are shown."""


def ask_at_terminal(request: ApprovalRequest, command: str = "run") -> Approve | Deny | Edit:
    """The decision the person at the terminal gives for `request`, asked for `chainkit
    <command>`."""
    from chainkit.agents import Approve, Deny, Edit

    tool = visible(one_line(request.tool, _SHOWN))
    stderr.tell(command, f"{tool} wants to run with {_shown(request.arguments)}")
    while True:
        answer = _ask("approve? [y]es, [n]o, [e]dit the arguments: ").strip().lower()
        if answer in ("y", "yes"):
            return Approve()
        if answer in ("n", "no"):
            return Deny(_ask("why not? (the model reads this): ").strip())
        if answer in ("e", "edit"):
            arguments = _edited(command)
            if arguments is not None:
                return Edit(arguments)
        else:
            stderr.tell(command, "answer y, n or e")


def answer_at_terminal(request: InputRequest, command: str = "run") -> object:
    """The answer the person at the terminal gives to a tool's question, asked for
    `chainkit <command>`."""
    stderr.tell(command, f"{request.tool} asks {_shown(request.question)}")
    typed = _ask("answer (JSON, or text): ")
    try:
        return json.loads(typed)
    except ValueError:
        return typed


def _edited(command: str) -> dict[str, object] | str | None:
    """New arguments as the person typed them, or None (after saying why) when they are not
    a JSON object or string."""
    typed = _ask("new arguments as JSON: ")
    try:
        value = json.loads(typed)
    except ValueError as error:
        stderr.tell(command, f"not JSON ({error}); asking again")
        return None
    if isinstance(value, dict | str):
        return value
    stderr.tell(command, "give a JSON object, or a JSON string for a tool taking text")
    return None


def _shown(arguments: object) -> str:
    text = json.dumps(arguments, ensure_ascii=False)
    return visible(one_line(text, _SHOWN))


def _ask(prompt: str) -> str:
    """One line the person typed after `prompt` (written on stderr: stdout is the answer's)."""
    if sys.stderr is not None:
        sys.stderr.write(prompt)
        sys.stderr.flush()
    try:
        line = "" if sys.stdin is None else sys.stdin.readline()
    except KeyboardInterrupt:
        _end_line()
        raise
    if not line:
        _end_line()
        raise EOFError("no answer: the terminal's input ended while a tool call waited")
    return line.rstrip("\n")


def _end_line() -> None:
    """Ends the prompt's line, so what is said next starts a line of its own."""
    if sys.stderr is not None:
        sys.stderr.write("\n")
