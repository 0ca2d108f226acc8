"""The observation text of an MCP tool result: text as it is, every other content kind described
in one bracketed line, so the model knows it was there."""

from __future__ import annotations

import json
from collections.abc import Sequence

from mcp.types import (
    AudioContent,
    CallToolResult,
    ContentBlock,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from chainkit._text import counted


def result_text(result: CallToolResult) -> str:
    """The text of all content blocks, one after another; the structured content as JSON when
    there is no content block."""
    if not result.content and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return _blocks_text(result.content)


def _blocks_text(blocks: Sequence[ContentBlock]) -> str:
    return "\n".join(_block_text(block) for block in blocks)


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        return f"[{block.mime_type or block.type}, {_size(_decoded_size(block.data))}]"
    if isinstance(block, ResourceLink):
        details = ", ".join(
            str(part) for part in (block.mime_type, _size(block.size)) if part is not None
        )
        return f"[resource {block.name}: {block.uri}{f', {details}' if details else ''}]"
    resource = block.resource
    if isinstance(resource, TextResourceContents):
        return f"[resource {resource.uri}]\n{resource.text}"
    kind = resource.mime_type or "binary"
    return f"[resource {resource.uri}: {kind}, {_size(_decoded_size(resource.blob))}]"


def _size(size: int | None) -> str | None:
    return None if size is None else counted(size, "byte")


def _decoded_size(data: str) -> int:
    """How many bytes base64 `data` decodes to, without decoding it."""
    digits = len(data) - data.count("\n") - data.count("\r")
    padding = len(data.rstrip("\r\n")) - len(data.rstrip("\r\n").rstrip("="))
    return max(digits * 3 // 4 - padding, 0)
