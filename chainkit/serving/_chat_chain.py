"""How a served chain takes a chat conversation, as OpenAI clients send it (the whole of it,
every request): the last message, the user's, is the chain's one input; the messages before
it (system messages among them) are the chain's history when it reads one (an input named as
its `history_key`, "history" or "chat_history": a ToolCallingAgent's, a chat prompt's
MessagesPlaceholder), given as `chains.with_history` gives it (messages, or text for a text
prompt). A chain that reads no history gets the whole conversation as a transcript in its
input ("User: …" / "Assistant: …" lines). A chain that keeps its own memory is stateful, so
only the new message is taken."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from chainkit._errors import ChainkitError
from chainkit.agents import Executor
from chainkit.chains import LLMChain, with_history
from chainkit.memory import ConversationBuffer, InMemoryHistory
from chainkit.serving._problems import Problem

if TYPE_CHECKING:
    from chainkit.chains import Chain
    from chainkit.schema import Message

_HISTORY_NAMES = ("history", "chat_history")
_SESSION = "chat"
_TRANSCRIPT = ConversationBuffer(human_prefix="User", ai_prefix="Assistant")


@dataclass(frozen=True, slots=True)
class ChatShape:
    """Where a conversation goes in a chain: its input, its history (None: it reads none),
    the output that is the answer, and how the answer can be read as it is written: "agent"
    (an agent's final answer, read from its events), "reply" (a model's reply as it is, an
    LLMChain's without a parser: its tokens) or "whole" (known only when the chain ends)."""

    input_key: str
    history_key: str | None
    output_key: str
    written_as: Literal["agent", "reply", "whole"]


def chat_shape(chain: Chain) -> ChatShape:
    """Where a conversation goes in `chain`; a Problem when it cannot take one (several
    inputs besides a history, no text answer)."""
    remembered = set(chain.memory.memory_variables) if chain.memory is not None else set()
    required = [key for key in chain.input_keys if key not in remembered]
    reads = [*required, *getattr(chain, "optional_input_keys", ())]
    histories = [key for key in reads if key in _history_names(chain) and key not in remembered]
    history = histories[0] if len(histories) == 1 else None
    inputs = [key for key in required if key != history]
    if len(inputs) != 1:
        raise _not_chat(chain, f"it takes {', '.join(inputs) or 'no inputs'}, not one message")
    keys = chain.output_keys
    output = keys[0] if len(keys) == 1 else chain.answer_key
    if output is None:
        raise _not_chat(chain, f"it answers with {', '.join(keys)}, and no one of them is text")
    if chain.output_not_text is not None:
        raise _not_chat(chain, chain.output_not_text)
    return ChatShape(inputs[0], history, output, _written_as(chain))


def _written_as(chain: Chain) -> Literal["agent", "reply", "whole"]:
    if isinstance(chain, Executor):
        return "agent"
    if isinstance(chain, LLMChain) and chain.output_parser is None:
        return "reply"
    return "whole"  # a chain's steps may change any model's text on its way to the answer


def conversation_run(
    chain: Chain, shape: ChatShape, messages: list[Message]
) -> tuple[Chain, dict[str, Any]]:
    """The chain to run for `messages` (the last the user's) and its inputs."""
    earlier, last = messages[:-1], messages[-1].content
    if shape.history_key is not None:
        history = InMemoryHistory()
        history.append(_SESSION, earlier)
        try:
            remembering = with_history(
                chain, history, input_key=shape.input_key, history_key=shape.history_key
            )
        except ChainkitError as refused:
            raise _not_chat(chain, str(refused)) from None
        return remembering.session(_SESSION), {shape.input_key: last}
    if not earlier:
        return chain, {shape.input_key: last}
    if chain.memory is not None:
        raise Problem(
            400,
            "stateful_chain",
            f"the served chain ({chain.name}) keeps its own memory of the conversation: send "
            "the new message alone",
        )
    return chain, {shape.input_key: _TRANSCRIPT.text_of(messages)}


def _history_names(chain: Chain) -> set[str]:
    named = {
        getattr(chain, "history_key", None),
        getattr(getattr(chain, "agent", None), "history_key", None),
    }
    return {name for name in (*named, *_HISTORY_NAMES) if isinstance(name, str)}


def _not_chat(chain: Chain, why: str) -> Problem:
    return Problem(
        400,
        "not_a_chat_chain",
        f"the served chain ({chain.name}) cannot answer a chat: {why}. Serve a chain of one "
        "input (and a history) with a text answer, as an agent is",
    )
