"""Errors of prompts: PromptError for bad templates or bad values, PromptTypeError for an
argument of a type a prompt cannot take, PromptAttributeError for another library's method."""

from __future__ import annotations

from chainkit._errors import ChainkitError


class PromptError(ChainkitError, ValueError):
    """A template could not be built or formatted.

    `variable` names the input that was missing or had the wrong type; `field` holds the
    template text that was rejected; `limit` names the TemplateLimits field a rendering ran
    out of ("max_steps", ...). Each is None when it does not apply.
    """

    def __init__(
        self,
        message: str,
        *,
        variable: str | None = None,
        field: str | None = None,
        limit: str | None = None,
    ) -> None:
        super().__init__(message)
        self.variable = variable
        self.field = field
        self.limit = limit

    @classmethod
    def missing(cls, variable: str) -> PromptError:
        """The error for a template variable that was given no value."""
        return cls(f"missing value for template variable {variable!r}", variable=variable)


class PromptAttributeError(ChainkitError, AttributeError):
    """A prompt method another library has (LangChain's `invoke`, `from_messages`) was
    asked for: the message names chainkit's way."""


class PromptTypeError(ChainkitError, TypeError):
    """A prompt was built or given something of a type it cannot take: a chat prompt item, a
    tool for render_chat, a conversation that is not a list of messages."""
