"""Per-session chat history for any chain or pipeline (LangChain's RunnableWithMessageHistory):
`with_history(chain, history).session(session_id)` is the chain bound to one session, which
every `chains.*` function runs.

Before each call the session's messages are loaded into the chain's inputs under
`history_key`; after a call that succeeded its exchange is appended, in one `append`: the
input under `input_key` (by default the one input besides `history_key`) as the user's
message, the output under `output_key` (by default the one output, the chain's
`answer_key`, or "output" among several) as the reply. A Message (a model's reply, with its
tool calls) or a list of content parts is kept as it is; other values as text. A call that
fails appends nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from chainkit._text import counted
from chainkit.chains._memory_fit import check_memory_fits, takes_text
from chainkit.chains.api import acall, call, check_chain
from chainkit.chains.chain import Chain
from chainkit.chains.errors import ChainTypeError, ChainWiringError
from chainkit.chains.llm import LLMChain
from chainkit.chains.pipeline import Pipeline
from chainkit.memory import ChatHistory, ConversationBuffer
from chainkit.memory.history import check_session_id
from chainkit.prompts import BasePromptTemplate
from chainkit.schema import Memory

__all__ = ["SessionChain", "WithHistory", "with_history"]

MemoryFactory = Callable[..., Memory]
"""Makes a session's memory from keyword arguments: history, session_id, memory_key,
input_key, output_key and return_messages (any conversation memory class takes them)."""

MAX_BOUND_SESSIONS = 1024
"""Sessions whose bound chain (and so memory) `session` keeps for the next call: a summary
memory's summary lives there. A session bound again after it fell out starts its memory
afresh over the same history."""


def with_history(
    chain: Chain,
    history: ChatHistory,
    *,
    input_key: str | None = None,
    output_key: str | None = None,
    history_key: str = "history",
    return_messages: bool | None = None,
    memory: MemoryFactory = ConversationBuffer,
) -> WithHistory:
    """`chain` given a history per session, kept in `history`; `.session(session_id)` binds
    it to one session (see the module).

    The history is given as messages, or as text when the chain's prompt is a text
    (f-string) template (an LLMChain's, the one a pipeline starts with, an agent's);
    `return_messages` decides instead when given. `memory` shows what of
    the session the chain gets: the whole session by default
    (memory.ConversationBuffer); `functools.partial(memory.ConversationWindow, k=5)` the
    last five exchanges, or any other conversation memory.
    """
    return WithHistory(
        chain,
        history,
        input_key=input_key,
        output_key=output_key,
        history_key=history_key,
        return_messages=return_messages,
        memory=memory,
    )


class WithHistory:
    """A chain with a history per session: see `with_history`."""

    def __init__(
        self,
        chain: Chain,
        history: ChatHistory,
        *,
        input_key: str | None,
        output_key: str | None,
        history_key: str,
        return_messages: bool | None,
        memory: MemoryFactory,
    ) -> None:
        check_chain("with_history", chain)
        if not isinstance(history, ChatHistory):
            raise ChainTypeError(
                "with_history needs a ChatHistory (such as memory.InMemoryHistory()), got "
                f"{type(history).__name__}"
            )
        if not callable(memory):
            raise ChainTypeError(
                f"with_history memory must make a memory (a memory class), got {memory!r:.60}"
            )
        _check_reads(chain, history_key)
        prompt = _first_prompt(chain)
        self.chain = chain
        self.history = history
        self._settings: dict[str, Any] = {
            "memory_key": history_key,
            "input_key": input_key,
            "output_key": chain.answer_key if output_key is None else output_key,
            "return_messages": not takes_text(prompt)
            if return_messages is None
            else return_messages,
        }
        self._memory = memory
        self._bound: OrderedDict[str, SessionChain] = OrderedDict()
        self._lock = threading.Lock()
        # A memory that could not work for this chain is found now, before any session runs.
        probe = self._memory_for(" ")
        check_memory_fits(probe, _reads(chain), prompt)
        probe.check_keys(_reads(chain), chain.output_keys)

    def __repr__(self) -> str:
        return f"WithHistory({self.chain.name}, {counted(len(self._bound), 'bound session')})"

    def session(self, session_id: str) -> SessionChain:
        """The chain bound to the session `session_id` (a non-empty str of at most 256
        characters)."""
        check_session_id(session_id)
        with self._lock:
            bound = self._bound.get(session_id)
            if bound is None:
                bound = SessionChain(self.chain, self._memory_for(session_id), session_id)
                self._bound[session_id] = bound
                if len(self._bound) > MAX_BOUND_SESSIONS:
                    self._bound.popitem(last=False)
            else:
                self._bound.move_to_end(session_id)
            return bound

    def _memory_for(self, session_id: str) -> Memory:
        made = self._memory(history=self.history, session_id=session_id, **self._settings)
        if not isinstance(made, Memory):
            raise ChainTypeError(
                f"with_history memory must make a memory, it made {type(made).__name__}"
            )
        return made


class SessionChain(Chain):
    """A chain bound to one session of a history: loads the session before each call and
    appends the exchange after it (through its `memory`)."""

    def __init__(self, chain: Chain, memory: Memory, session_id: str) -> None:
        self.chain = chain
        self.memory = memory
        self.session_id = session_id
        self.answer_key = chain.answer_key

    def __repr__(self) -> str:
        return f"SessionChain({self.chain.name}, session_id={self.session_id!r})"

    @property
    def name(self) -> str:
        return "WithHistory"  # its run holds the chain's own run, named as the chain is

    @property
    def input_keys(self) -> list[str]:
        return self.chain.input_keys

    @property
    def output_keys(self) -> list[str]:
        return self.chain.output_keys

    @property
    def output_not_text(self) -> str | None:
        return self.chain.output_not_text

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        return call(self.chain, inputs, **options)

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        return await acall(self.chain, inputs, **options)


def _check_reads(chain: Chain, history_key: str) -> None:
    if not isinstance(history_key, str) or not history_key:
        raise ChainTypeError(
            f"with_history history_key must be a non-empty str, got {history_key!r}"
        )
    if chain.memory is not None and history_key in chain.memory.memory_variables:
        raise ChainWiringError(
            f"{chain.name} has a memory of its own that fills {history_key!r}: give the chain "
            "no memory, with_history keeps the conversation"
        )
    if history_key not in _reads(chain):
        raise ChainWiringError(
            f"{chain.name} does not read the history key {history_key!r}; it reads "
            f"{sorted(_reads(chain))}. Add MessagesPlaceholder({history_key!r}) to its chat "
            f"prompt (or {{{history_key}}} to a text prompt), or give with_history the "
            "history_key its prompt uses"
        )


def _reads(chain: Chain) -> list[str]:
    """The inputs `chain` reads: those it needs, and those it reads when given (an agent's
    `optional_input_keys`, where a history goes)."""
    return [*chain.input_keys, *getattr(chain, "optional_input_keys", ())]


def _first_prompt(chain: Chain) -> BasePromptTemplate | None:
    """The prompt the history goes into, where it can be told: an LLMChain's, the one a
    pipeline starts with, an agent's (an Executor's `agent.prompt`)."""
    if isinstance(chain, LLMChain):
        return chain.prompt
    if isinstance(chain, Pipeline):
        return chain._first_prompt
    prompt = getattr(getattr(chain, "agent", None), "prompt", None)
    return prompt if isinstance(prompt, BasePromptTemplate) else None
