"""ConversationBuffer: remembers every exchange, as text or as messages."""

from __future__ import annotations

from chainkit.memory._conversation import ConversationMemory
from chainkit.memory.errors import MemoryKeyError as MemoryKeyError


class ConversationBuffer(ConversationMemory):
    """Keeps the whole conversation and hands it to the chain under `memory_key`.

    With `return_messages=True` the history is a list of Message (for a MessagesPlaceholder);
    otherwise it is text, one "Human: …" / "AI: …" line per message (`human_prefix`,
    `ai_prefix`; tool calls and results, images and files written out readably).

    The exchange saved is the input under `input_key` (by default the one input besides
    `memory_key`) and the output under `output_key` (by default the one output, or "output"
    among several, as an agent gives). A Message (a model's reply, with its tool calls) or a
    list of content parts is kept as it is.

    With `history` (a ChatHistory) and `session_id` the messages are kept in that history
    under the session id, otherwise in the memory itself.
    """
