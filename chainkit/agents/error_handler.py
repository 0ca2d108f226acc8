"""ParserErrorHandler: send a malformed reply's error back to the model instead of failing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chainkit.agents.errors import OutputParserError


@dataclass(slots=True)
class ParserErrorHandler:
    """Turns an OutputParserError into the next observation, through `formatter` if given."""

    formatter: Callable[[str], str] | None = None

    def observation(self, error: OutputParserError) -> str:
        if self.formatter is None:
            return error.observation
        return self.formatter(error.observation)
