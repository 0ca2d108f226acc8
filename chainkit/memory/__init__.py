"""Memory carries a conversation from one chain call to the next."""

from chainkit.memory.buffer import ConversationBuffer, MemoryKeyError

__all__ = ["ConversationBuffer", "MemoryKeyError"]
