"""A retriever as an agent's tool (`Retriever.as_tool`): a query in, the documents found out
as text the model reads, each headed by its rank, id and source, within a bound."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from chainkit._text import described, shorten
from chainkit.indexes import Hit
from chainkit.retrievers.errors import QueryError, RetrieverConfigError, RetrieverTypeError
from chainkit.tools import Tool, ToolError

Search = Callable[[str], list[Hit]]
ASearch = Callable[[str], Awaitable[list[Hit]]]

NOTHING_FOUND = "No document matches this query."


class RetrieverTool(Tool):
    """Calls a retriever's `search` (or `asearch`) with the model's query and answers with
    what it found (`observation`). Searching has no side effect: a call is idempotent."""

    idempotent = True

    def __init__(
        self,
        search: Search,
        asearch: ASearch,
        name: object,
        description: object,
        max_chars: object,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise RetrieverTypeError(f"a tool's name must be a non-empty str, got {name!r:.80}")
        if description is None:
            description = "Searches the documents. Input: what to look for, in a few words."
        if not isinstance(description, str) or not description.strip():
            raise RetrieverTypeError(
                f"a tool's description must be a non-empty str, got {described(description)}"
            )
        if isinstance(max_chars, bool) or not isinstance(max_chars, int):
            raise RetrieverTypeError(f"max_chars must be a whole number, got {max_chars!r:.80}")
        if max_chars < 100:
            raise RetrieverConfigError(
                f"max_chars must be at least 100 (room for one document), got {max_chars}"
            )
        self.name = name
        self.description = description
        self.max_chars = max_chars
        self._search = search
        self._asearch = asearch

    def call(self, input: str) -> str:
        try:
            hits = self._search(input)
        except QueryError as error:
            raise ToolError(str(error)) from None
        return observation(hits, self.max_chars)

    async def acall(self, input: str) -> str:
        try:
            hits = await self._asearch(input)
        except QueryError as error:
            raise ToolError(str(error)) from None
        return observation(hits, self.max_chars)


def observation(hits: Sequence[Hit], max_chars: int) -> str:
    """The documents of `hits` as the model reads them, best first, in `max_chars`
    characters at most: each headed by its rank, id, source and score; the document that
    reaches the bound is cut there, and those after it are left out."""
    if not hits:
        return NOTHING_FOUND
    blocks: list[str] = []
    left = max_chars
    for rank, hit in enumerate(hits, 1):
        block = f"{_heading(rank, hit)}\n{hit.document.text.strip()}"
        separator = 2 if blocks else 0
        if len(block) + separator > left:
            if left - separator > 40:  # room for the heading and a little of the text
                blocks.append(shorten(block, left - separator))
            break
        blocks.append(block)
        left -= len(block) + separator
    return "\n\n".join(blocks)


def _heading(rank: int, hit: Hit) -> str:
    document = hit.document
    source = document.metadata.get("source")
    where = f", source {shorten(str(source), 200)}" if source is not None else ""
    return f"[{rank}] id {shorten(document.id, 200)}{where} (score {hit.score:.3g})"
