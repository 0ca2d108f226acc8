"""Parse a MRKL / ReAct reply ("Thought / Action / Action Input / Final Answer") into a step.

The grammar is `chainkit._mrkl`'s, whose docstring gives it whole: `callbacks.FinalAnswerStream`
reads the final answer of a streamed reply by the same rules. Here a reply the grammar cannot
read becomes an `OutputParserError`, whose `observation` tells the model what to fix.
"""

from __future__ import annotations

from chainkit._mrkl import (
    MAX_FENCE_LINES,
    MISSING_ACTION,
    MISSING_ACTION_INPUT,
    PLAIN_REPLY,
    UnreadableReplyError,
    read_step,
    unquote,
)
from chainkit.agents.errors import AgentTypeError, OutputParserError
from chainkit.schema import AgentAction, AgentFinish

__all__ = ["MAX_FENCE_LINES", "MISSING_ACTION", "MISSING_ACTION_INPUT", "parse_mrkl_output"]


def parse_mrkl_output(text: str) -> AgentAction | AgentFinish:
    """Turn a MRKL / ReAct model reply into the agent's next step.

    Raises `OutputParserError` carrying the observation to send back to the model, and
    AgentTypeError (a TypeError) when `text` is not a string.
    """
    if not isinstance(text, str):
        raise AgentTypeError(
            f"parse_mrkl_output expects the reply as str, got {type(text).__name__}"
        )
    # The plain shape is tried only when the reply's first colon ends `Action:` or `Final
    # Answer:`: found by memchr, so a long reply of another shape is not read twice. Written
    # here rather than as a helper, as this runs on every step of every MRKL run.
    keyword_first = text.endswith(("Action:", "Final Answer:"), 0, text.find(":") + 1)
    plain = PLAIN_REPLY.fullmatch(text) if keyword_first else None
    if plain is None:
        try:
            return read_step(text)
        except UnreadableReplyError as error:
            raise OutputParserError(error.observation, llm_output=text) from None
    tool, after = plain.groups()
    if tool is None:
        return AgentFinish({"output": after.strip()}, log=text)
    return AgentAction(tool, unquote(after.strip()), text.rstrip())  # no fence to drop
