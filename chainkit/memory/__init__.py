"""Memory carries a conversation from one chain call to the next.

The errors of this package report a memory set up wrong: they are in
`chainkit.memory.errors`.
"""

from chainkit.memory import errors as errors
from chainkit.memory.buffer import ConversationBuffer
from chainkit.memory.history import ChatHistory, InMemoryHistory

__all__ = ["ChatHistory", "ConversationBuffer", "InMemoryHistory"]
