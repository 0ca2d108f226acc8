"""A model stream that breaks partway and is answered on its retry, over the loopback server:
the case where what was streamed is not the reply."""

from __future__ import annotations

from chainkit import agents, tools
from chainkit.llms import OpenAI
from tests.support.openai_server import Fault, OpenAIServer, Reply

BROKEN_REPLY = "Final Answer: The answer is 85, I believe."
STREAMED_BEFORE_THE_BREAK = "Final Answer: The answer is 85, "
"""What the first attempt streams before its connection is cut: its first two pieces."""
ANSWER = "It is 84."


def break_then_answer(server: OpenAIServer, reply: str = f"Final Answer: {ANSWER}") -> None:
    """The next model call's stream is cut after STREAMED_BEFORE_THE_BREAK; its retry streams
    `reply` in pieces of four characters."""
    server.fail(Fault.cut(after_chunks=3, reply=Reply(BROKEN_REPLY, chunk_size=16)))
    server.push(Reply(reply, chunk_size=4))


def mrkl_executor(llm: OpenAI) -> agents.Executor:
    """A MRKL agent on `llm`, with a calculator it never needs."""
    return agents.Executor(agents.OneShotAgent(llm, [tools.Calculator()]))
