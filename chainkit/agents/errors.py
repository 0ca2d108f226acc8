"""Errors of agents: those a run can end with, each carrying what the caller needs to act on
it, and those refusing an agent or Executor that could not work."""

from __future__ import annotations

from collections import Counter
from typing import Literal

from chainkit._errors import ChainkitError
from chainkit._text import counted, quoted, shorten
from chainkit.schema import AgentStep, Message

PARSE_ERROR_TOOL = "_Exception"
"""The tool name of the step that carries a parse error back to the model."""
_QUOTED = 200


class OutputParserError(ChainkitError, ValueError):
    """The model's reply could not be parsed.

    `observation` is the text to send back to the model so it can correct itself;
    `llm_output` is the reply as the model wrote it. `typed_answer` marks a final answer that
    did not fit the Executor's `output_type` (sent back whatever the error handler); `reply`
    and `tool_call_id` are the reply and the call the observation answers, when it answers one.
    """

    def __init__(
        self,
        observation: str,
        llm_output: str,
        *,
        typed_answer: bool = False,
        reply: Message | None = None,
        tool_call_id: str | None = None,
    ) -> None:
        super().__init__(f"{observation}\nModel output: {quoted(llm_output, 500)}")
        self.observation = observation
        self.llm_output = llm_output
        self.typed_answer = typed_answer
        self.reply = reply
        self.tool_call_id = tool_call_id


class NotFinishedError(ChainkitError, RuntimeError):
    """The agent hit `max_iterations` or `max_execution_time` before a final answer.

    `steps` holds every step taken, so no work is lost; `limit` names the limit hit; the
    message says what the steps were spent on (tool calls, by tool, or replies that could not be
    parsed) and what came last.
    """

    def __init__(
        self,
        reason: str,
        steps: list[AgentStep],
        *,
        limit: Literal["max_iterations", "max_execution_time"] | None = None,
    ) -> None:
        super().__init__(f"agent not finished: {reason}; {spent_on(steps)}")
        self.reason = reason
        self.steps = steps
        self.limit = limit


class DeadlineExceededError(ChainkitError, TimeoutError):
    """`max_execution_time` ran out while a model or tool call was in progress, and a sync run
    stopped waiting for it. Reported to callbacks as that call's error; the run itself ends
    with NotFinishedError (or a final answer, with early_stopping_method="generate")."""


class NoReturnError(ChainkitError, RuntimeError):
    """The agent returned neither an action nor a final answer."""


class UnknownToolError(ChainkitError, LookupError):
    """The model named a tool the agent does not have. Not raised: its message becomes the
    observation, and callbacks see it as the tool's error."""

    def __init__(self, tool: str, known: str) -> None:
        super().__init__(f"{tool} is not a valid tool, try one of [{known}].")
        self.tool = tool


class AgentConfigError(ChainkitError, ValueError):
    """An agent or Executor that could not work as given: no tools, tool names a model could
    not tell apart or write back, a limit out of range, a prompt without its scratchpad, a
    memory whose variables the agent does not read."""


class ConstraintRefusedError(AgentConfigError):
    """The server refused the grammar an agent sent to constrain decoding (`constrain=`): it
    does not take that request field (the OpenAI API takes none), or not that grammar. The
    message names the field and the server's answer."""


class AgentTypeError(ChainkitError, TypeError):
    """An agent or Executor was given something of the wrong type: tools that are not Tools,
    an agent that is not an Agent, a list of messages for a text prompt, a reply that is not
    text."""


def spent_on(steps: list[AgentStep]) -> str:
    """What `steps` were spent on, in a sentence: tool calls by tool (and how many repeat an
    earlier call), replies that could not be parsed, and the last step's outcome."""
    if not steps:
        return "no step was taken"
    calls = [step.action for step in steps if step.action.tool != PARSE_ERROR_TOOL]
    unparsed = len(steps) - len(calls)
    last = steps[-1]
    if not calls:
        replies = f"all {unparsed} replies" if unparsed > 1 else "the one reply"
        return (
            f"{replies} of the model could not be parsed; the last was "
            f"{quoted(last.action.log, _QUOTED)} ({_flat(last.action.tool_input)})"
        )
    counts = Counter(action.tool for action in calls).most_common()
    text = f"{counted(len(calls), 'tool call')}: " + ", ".join(f"{n} ×{k}" for n, k in counts)
    repeats = len(calls) - len({(action.tool, action.tool_input) for action in calls})
    if repeats:
        text += f" ({repeats} repeating an earlier call with the same input)"
    if unparsed:
        text += f", and {counted(unparsed, 'reply')} that could not be parsed"
    if last.action.tool == PARSE_ERROR_TOOL:
        return f"{text}; the last reply was {quoted(last.action.log, _QUOTED)}"
    observation = quoted(last.observation, _QUOTED)
    return f"{text}; the last observation, from {last.action.tool}, was {observation}"


def _flat(text: str) -> str:
    return shorten(" ".join(text.split()), _QUOTED)
