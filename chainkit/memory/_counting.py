"""How a token-bounded memory counts a conversation: with the model's own counter where it
has one (a `count_tokens(messages) -> int` method), or a function given for it; otherwise
with the project's estimate (`chainkit._tokens`: a quarter of the characters, 4 tokens per
message, images and files by what providers charge)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from chainkit._tokens import message_tokens
from chainkit.memory.errors import MemoryTypeError, MemoryValueError
from chainkit.schema import Message

Counter = Callable[[Sequence[Message]], int]


def counter_of(kind: str, llm: object, count_tokens: Counter | None) -> Counter:
    """The counter a memory uses: `count_tokens` when given, then `llm`'s own, then the
    project's estimate."""
    if count_tokens is not None:
        if not callable(count_tokens):
            raise MemoryTypeError(
                f"{kind} count_tokens must be a function of a list of messages, got "
                f"{type(count_tokens).__name__}"
            )
        return count_tokens
    own = getattr(llm, "count_tokens", None)
    return own if callable(own) else message_tokens


def checked_count(kind: str, counter: Counter, messages: Sequence[Message]) -> int:
    count = counter(messages)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise MemoryTypeError(
            f"{kind}'s token counter must return a count (an int >= 0), got {count!r:.80}"
        )
    return count


def require_bound(kind: str, argument: str, value: object, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MemoryTypeError(f"{kind} {argument} must be an int, got {value!r:.80}")
    if value < least:
        raise MemoryValueError(f"{kind} {argument} must be at least {least}, got {value}")
    return value
