"""Pacers: watchers that hold a run back between its steps until they have caught up.

`chains.stream` hands events to a reader who may stop reading at any event; a run that went
on meanwhile would call the next tool for nobody. An agent's driver asks the pacer among its
handlers, before each step, to `pause` until the reader asks for more.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from chainkit.callbacks.combining import CombiningHandler


class Pacer(ABC):
    """A handler's side that a run waits on between its steps."""

    @abstractmethod
    def pause(self) -> float:
        """Returns once the run may take its next step, with the seconds it waited; raises
        `callbacks.StreamClosed` if it must not."""

    @abstractmethod
    async def apause(self) -> float:
        """Async twin of `pause`."""


def pacer_of(handler: CombiningHandler | None) -> Pacer | None:
    """The pacer among `handler`'s handlers, if any."""
    if handler is None:
        return None
    for each in handler.handlers:
        if isinstance(each, Pacer):
            return each
        if isinstance(each, CombiningHandler) and (found := pacer_of(each)) is not None:
            return found
    return None
