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
    UnreadableReplyError,
    read_reply,
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
    try:
        return read_reply(text)
    except UnreadableReplyError as error:
        raise OutputParserError(error.observation, llm_output=text) from None
