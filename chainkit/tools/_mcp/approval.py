"""Which tools of an MCP server need approval: `MCPTools(requires_approval=...)` read once,
then asked for each tool the server lists."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from functools import partial
from typing import Any

from chainkit.tools.errors import ToolTypeError

_Mark = bool | Callable[[Any], bool]


class ApprovalMarks:
    """`requires_approval=` of an MCPTools: True or False for every tool, a set of the names
    the server lists, or a function of (name, arguments)."""

    __slots__ = ("_decide", "_every", "_names")

    def __init__(
        self,
        every: bool = False,
        names: frozenset[str] = frozenset(),
        decide: Callable[[str, Any], bool] | None = None,
    ) -> None:
        self._every = every
        self._names = names
        self._decide = decide

    def mark(self, name: str) -> _Mark:
        """The `requires_approval` of the tool the server calls `name`."""
        if self._decide is not None:
            return partial(self._decide, name)
        return self._every or name in self._names

    def unlisted(self, listed: Iterable[str]) -> list[str]:
        """The names marked that are not among `listed`, sorted."""
        return sorted(self._names - set(listed))


def approval_marks(requires_approval: object) -> ApprovalMarks:
    """Reads `MCPTools(requires_approval=...)`; ToolTypeError for anything else."""
    if isinstance(requires_approval, bool):
        return ApprovalMarks(every=requires_approval)
    if callable(requires_approval):
        return ApprovalMarks(decide=requires_approval)
    if isinstance(requires_approval, Collection) and not isinstance(requires_approval, str | bytes):
        names = frozenset(requires_approval)
        if all(isinstance(name, str) for name in names):
            return ApprovalMarks(names=names)
    raise ToolTypeError(
        "requires_approval must be True, False, a set of tool names or a function of (name, "
        f"arguments), got {type(requires_approval).__name__}: {requires_approval!r:.100}"
    )
