"""Memory carries a conversation from one chain call to the next."""

from chainkit.memory.buffer import ConversationBuffer
from chainkit.memory.errors import MemoryKeyError, MemoryTypeError

__all__ = ["ConversationBuffer", "MemoryKeyError", "MemoryTypeError"]
