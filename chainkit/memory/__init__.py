"""Memory carries a conversation from one chain call to the next.

The conversation memories (a buffer, windows, summaries) keep their messages in themselves or
in a `ChatHistory` under a session id. The errors of this package report a memory set up
wrong: they are in `chainkit.memory.errors`.
"""

import typing

from chainkit._lazy import lazy_exports as _lazy_exports
from chainkit.memory import errors as errors
from chainkit.memory.buffer import ConversationBuffer
from chainkit.memory.history import ChatHistory, InMemoryHistory
from chainkit.memory.summary import ConversationSummary, ConversationSummaryBuffer
from chainkit.memory.window import ConversationTokenWindow, ConversationWindow

if typing.TYPE_CHECKING:
    from chainkit.memory.sql_history import SQLHistory

# Loaded on first use: a chain with memory in itself pays nothing for the store layer.
__getattr__, __dir__ = _lazy_exports(
    "chainkit.memory", {"SQLHistory": "chainkit.memory.sql_history"}, globals()
)

__all__ = [
    "ChatHistory",
    "ConversationBuffer",
    "ConversationSummary",
    "ConversationSummaryBuffer",
    "ConversationTokenWindow",
    "ConversationWindow",
    "InMemoryHistory",
    "SQLHistory",
]
