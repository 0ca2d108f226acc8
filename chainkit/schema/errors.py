"""Errors of the plain data types: a message in the wrong shape, chunks that do not join, a
conversion that would lose something."""

from __future__ import annotations

from chainkit._errors import ChainkitError


class MessageFormatError(ChainkitError, ValueError, TypeError):
    """A schema value in the wrong shape: a wrong type, a role that does not exist, a part
    that says nothing. `field` names the field at fault, when one is.

    It is both a ValueError and a TypeError, so code that catches either for bad input
    catches it.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ConcatError(ChainkitError, ValueError):
    """Chunks that cannot form one message. `field` names the field whose values `first` and
    `second` disagree; it is None when no single field is to blame."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        first: object = None,
        second: object = None,
    ) -> None:
        super().__init__(message)
        self.field = field
        self.first = first
        self.second = second

    @classmethod
    def conflict(cls, field: str, first: object, second: object) -> ConcatError:
        return cls(
            f"cannot concat chunks with different {field}: {first!r} and {second!r}",
            field=field,
            first=first,
            second=second,
        )


class ConversionError(ChainkitError, ValueError):
    """A message holds something the other form cannot express; `role` and `field` name it."""

    def __init__(self, message: str, *, role: str, field: str) -> None:
        super().__init__(message)
        self.role = role
        self.field = field
