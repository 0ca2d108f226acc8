"""FakeLLM: a scripted model for tests of everything above the model."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from chainkit._text import counted
from chainkit.llms._streaming import stream_text
from chainkit.llms.cache import ResponseCache
from chainkit.llms.errors import FakeLLMExhaustedError as FakeLLMExhaustedError
from chainkit.llms.errors import ModelConfigError
from chainkit.llms.model import BaseModel, ModelRequest
from chainkit.schema import Message


@dataclass(slots=True)
class FakeCall:
    """One recorded call: the messages sent and every option given (stop and tools included)."""

    messages: list[Message]
    options: dict[str, Any] = field(default_factory=dict)


class FakeLLM(BaseModel):
    """Returns `responses` in order; streams each in chunks of `chunk_size` characters when a
    `streaming_func` is given; records every call in `calls`. A `cache` answers calls it has
    answered before, as for any model (`llms.cache`)."""

    def __init__(
        self,
        responses: Sequence[str | Message],
        *,
        chunk_size: int = 4,
        cache: ResponseCache | Literal[False] | None = None,
    ) -> None:
        if chunk_size < 1:
            raise ModelConfigError(f"chunk_size must be at least 1, got {chunk_size}")
        self.cache = cache
        self.responses: list[str | Message] = list(responses)
        self.chunk_size = chunk_size
        self.calls: list[FakeCall] = []
        self._lock = threading.Lock()  # chains.apply calls one model from several threads

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]  # locks do not copy; a copy gets its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        responses, calls = (
            counted(len(self.responses), "response"),
            counted(len(self.calls), "call"),
        )
        return f"FakeLLM({responses}, {calls})"

    def _generate(self, request: ModelRequest) -> Message:
        options = {"stop": request.stop, "tools": request.tools, **request.options}
        call = FakeCall(list(request.messages), options)
        # acquire and release rather than `with`: this runs on every call of the scripted
        # runs that bench/ measures the framework's own time with.
        self._lock.acquire()
        try:
            index = len(self.calls)
            self.calls.append(call)
        finally:
            self._lock.release()
        if index >= len(self.responses):
            raise FakeLLMExhaustedError(
                f"FakeLLM has {counted(len(self.responses), 'scripted response')} and was "
                f"called {_times(index + 1)}; add a response for call {index + 1}"
            )
        response = self.responses[index]
        reply = Message.assistant(response) if isinstance(response, str) else response
        if request.streaming_func is not None:
            stream_text(reply.content, request.streaming_func, self.chunk_size)
        return reply


def _times(number: int) -> str:
    return "once" if number == 1 else f"{number:,} times"
