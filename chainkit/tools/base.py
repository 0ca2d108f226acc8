"""Tool: a named function an agent may call with a string."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chainkit._elsewhere import Elsewhere
from chainkit._pipe import Pipeable
from chainkit._stop import stop_escaped, to_thread
from chainkit._text import described
from chainkit.schema import ToolInfo
from chainkit.tools._arguments import decode_json
from chainkit.tools._schema_text import prompt_arguments
from chainkit.tools.errors import MalformedJSONError, ToolAttributeError, ToolTypeError
from chainkit.tools.errors import ToolError as ToolError

_STRING_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "the tool's input"}},
    "required": ["input"],
}


@dataclass(frozen=True, slots=True)
class ToolExample:
    """A call of a tool and, optionally, what it returned (`observation`) and the final answer
    it led to (`answer`). `input` is the call's arguments as the tool takes them: the text for
    a tool taking one string (a plain Tool), a dict of arguments for a typed one (@tools.tool).
    """

    input: str | Mapping[str, Any]
    observation: str | None = None
    answer: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.input, str | Mapping):
            raise ToolTypeError(
                "ToolExample input must be text or a dict of arguments, got "
                f"{described(self.input)}"
            )
        for field, value in (("observation", self.observation), ("answer", self.answer)):
            if value is not None and not isinstance(value, str):
                raise ToolTypeError(
                    f"ToolExample {field} must be text or None, got {described(value)}"
                )


class Tool(Pipeable):
    """Subclass with class attributes `name` and `description`, and a `call` method.

    They may also be set per instance, as StructuredTool does.

    `return_direct = True` ends the run with this tool's output as the final answer.

    `idempotent = True` says a call may safely be made twice with the same input: a
    checkpointed run that stopped in the middle of such a call repeats it when resumed
    (`chains.resume`); a call of any other tool cut in the middle is reported instead.

    `input_required = False` says the input may be left out (the tool then gets ''): its
    schema does not require it, and a native call's `{}` is an empty input.

    `requires_approval` says whether a call needs a person's decision before it runs (an
    Executor's `approve=`): True, False, or a function given the call's arguments that says
    whether this call does. It gets a dict for a JSON object of arguments; a tool taking one
    string (a plain Tool, or a MRKL Action Input that is no JSON object) gets the input text.

    `blocking` says whether `call` may wait (on the network, a disk, a lock, a sleep) or run
    long. In async code (`acall`), a blocking tool's `call` runs in a worker thread, so the
    event loop goes on meanwhile; a tool whose `call` always returns at once, such as the
    built-ins (pure computation on a short input), sets `blocking = False` and is called in the
    event loop's own thread, saving the hop to a worker thread and back.

    `examples` lists worked calls (`ToolExample`) an agent shows the model: a OneShotAgent as
    MRKL steps in its prompt, a ToolCallingAgent in the tool's description. Each is checked
    against the tool's arguments when the tool joins a Toolset (an agent's tools).
    """

    name: str = ""
    description: str = ""
    return_direct: bool = False
    idempotent: bool = False
    input_required: bool = True
    blocking: bool = True
    requires_approval: bool | Callable[[Any], bool] = False
    examples: tuple[ToolExample, ...] = ()

    if not TYPE_CHECKING:  # to mypy they stay missing, so it flags them in user code
        run = Elsewhere("use tool.call(input)", ToolAttributeError)
        invoke = Elsewhere("use tool.call(input)", ToolAttributeError)
        arun = Elsewhere("use await tool.acall(input)", ToolAttributeError)
        ainvoke = Elsewhere("use await tool.acall(input)", ToolAttributeError)

    def call(self, input: str) -> str:
        raise NotImplementedError(f"tool {self.name!r} must implement call(input)")

    async def acall(self, input: str) -> str:
        """Runs `call` in a worker thread, or in this thread when the tool is not `blocking`;
        override for a natively async tool.

        The thread is a daemon: a call whose caller was cancelled (as at an Executor's
        max_execution_time) and that never returns keeps neither `asyncio.run` nor the
        interpreter from exiting.
        """
        if not self.blocking:
            # call_guarded's work in line, so the source's text is formatted only for the
            # error that needs it, not on every call of an agent's tools.
            try:
                return self.call(input)
            except (StopIteration, StopAsyncIteration) as error:
                raise stop_escaped(error, f"tool {self.name!r}") from error
        return await to_thread(f"tool {self.name!r}", self.call, input)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments a tool-calling model sends: one string, `input`."""
        schema = copy.deepcopy(_STRING_INPUT)  # a caller may edit it; other tools must not see that
        if not self.input_required:
            schema["required"] = []
        return schema

    def prompt_description(self) -> str:
        """How a text prompt (a OneShotAgent's) lists the tool: `name: description`, and its
        arguments when it takes more than one string, so the model writes them right at once."""
        if type(self).parameters is Tool.parameters:
            return f"{self.name}: {self.description}"  # one string: no copy of the schema needed
        return f"{self.name}: {self.description}{prompt_arguments(self.parameters)}"

    def info(self) -> ToolInfo:
        """How this tool is presented to a model that calls tools natively."""
        return ToolInfo(self.name, self.description, self.parameters)

    def call_arguments(self, arguments: str) -> str:
        """Runs the tool on a native tool call's JSON arguments (Eino's
        `InvokableRun(argumentsInJSON)`); a model's arguments are checked once, here."""
        return self.call(self.input_from_arguments(arguments))

    async def acall_arguments(self, arguments: str) -> str:
        """Async twin of `call_arguments`."""
        return await self.acall(self.input_from_arguments(arguments))

    def input_from_arguments(self, arguments: str) -> str:
        """Turns a native tool call's JSON arguments into the string `call` takes.

        Raises ToolError, naming what is wrong, when the arguments are not `{"input": "..."}`.
        """
        try:
            value = decode_json(arguments) if arguments.strip() else {}
        except MalformedJSONError as error:
            raise ToolError(f"Invalid arguments for tool {self.name}: {error}") from None
        if isinstance(value, dict):
            value = value.get("input", None if self.input_required else "")
        if isinstance(value, str):
            return value
        raise ToolError(
            f'Invalid arguments for tool {self.name}: expected {{"input": "<text>"}}, '
            f"got {arguments[:200]!r}"
        )


def check_approval_mark(mark: object) -> None:
    """Refuses a `requires_approval` that is neither True, False nor a function."""
    if not isinstance(mark, bool) and not callable(mark):
        raise ToolTypeError(
            "requires_approval must be True, False or a function of the call's arguments, got "
            f"{type(mark).__name__}: {mark!r:.100}"
        )
