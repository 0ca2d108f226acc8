"""PromptError: the one error a prompt template raises for bad templates or bad values."""

from __future__ import annotations


class PromptError(ValueError):
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
