"""Token counts, in one place: how many tokens a request to an OpenAI-compatible server may
use, before it says, and how many it says a reply used.

Text counts a quarter of its characters (OpenAI's rule of thumb), each message 4 more for
the chat format around it, plus the reply's `max_tokens`. Other content counts what
providers charge for it, never the length of its base64 text:

- An image counts by OpenAI's rule for its detail: 85 tokens at "low"; otherwise it is
  scaled to fit in 2048 x 2048, then its shorter side to at most 768 pixels, and it costs 85
  plus 170 for each 512-pixel tile that covers it. The size is read from the header of an
  inline PNG, JPEG, GIF or WebP; an image given by URL, or one whose size cannot be read,
  counts the most any image costs: 1,445 tokens (eight tiles).
- An audio or file part counts a fixed 1,000 tokens.

The server's reported usage corrects the estimate once a request ends: `reported_count` reads
a count it sent, `reply_tokens` the tokens a reply's usage counts.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from chainkit.schema import Message

CHARACTERS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4
"""What a chat format adds around each message (role, separators), as OpenAI counts it."""
IMAGE_BASE_TOKENS = 85
IMAGE_TILE_TOKENS = 170
IMAGE_MOST_TOKENS = IMAGE_BASE_TOKENS + 8 * IMAGE_TILE_TOKENS
"""An image scaled to fit 2048 pixels, then 768 on its shorter side, is covered by at most
4 x 2 tiles of 512."""
AUDIO_OR_FILE_TOKENS = 1_000
_HEADER_BASE64 = 96 * 1024
"""Base64 characters decoded to find an image's size: a JPEG's size may follow its EXIF."""


def estimate_tokens(request: Mapping[str, Any]) -> int:
    """Tokens a chat or embeddings request may use, as the module says."""
    characters = tokens = 0
    for message in request.get("messages") or ():
        tokens += TOKENS_PER_MESSAGE
        text_characters, part_tokens = _content_cost(message.get("content"))
        characters += text_characters
        tokens += part_tokens
        for call in message.get("tool_calls") or ():
            characters += len(str(call.get("function", {}).get("arguments", "")))
    inputs = request.get("input")
    if inputs is not None:
        for piece in [inputs] if isinstance(inputs, str) else inputs:
            tokens += TOKENS_PER_MESSAGE
            characters += len(str(piece))
    for tool in request.get("tools") or ():
        characters += len(str(tool))
    most = request.get("max_tokens") or request.get("max_completion_tokens")
    if isinstance(most, bool) or not isinstance(most, int):
        most = 0  # not a count: the server will say so; the estimate goes without it
    return -(-characters // CHARACTERS_PER_TOKEN) + tokens + most


def text_tokens(text: str) -> int:
    """Tokens `text` counts by the project's estimate: a quarter of its characters, rounded
    up (what a splitter sized in tokens measures a chunk by)."""
    return -(-len(text) // CHARACTERS_PER_TOKEN)


def message_tokens(messages: Sequence[Message]) -> int:
    """Tokens `messages` take in a request, as the module says (the project's estimate, for
    counting a conversation where a model has no counter of its own)."""
    return estimate_tokens({"messages": [message.to_dict(request=True) for message in messages]})


def _content_cost(content: object) -> tuple[int, int]:
    """(characters of text, tokens of other parts) of a message's content."""
    if content is None:
        return 0, 0
    if isinstance(content, str):
        return len(content), 0
    if not isinstance(content, list):
        return len(str(content)), 0
    characters = tokens = 0
    for part in content:
        text_characters, part_tokens = _part_cost(part)
        characters += text_characters
        tokens += part_tokens
    return characters, tokens


def _part_cost(part: object) -> tuple[int, int]:
    if not isinstance(part, Mapping):
        return len(str(part)), 0
    kind = part.get("type")
    if kind == "text":
        return len(str(part.get("text") or "")), 0
    if kind == "image_url":
        image = part.get("image_url")
        return 0, image_tokens(image if isinstance(image, Mapping) else {"url": image})
    if kind in ("input_audio", "file"):
        return 0, AUDIO_OR_FILE_TOKENS
    return len(str(part)), 0


def image_tokens(image: Mapping[str, Any]) -> int:
    """What OpenAI charges for an `image_url` part's image, as the module says."""
    if image.get("detail") == "low":
        return IMAGE_BASE_TOKENS
    url = image.get("url")
    size = image_size(url) if isinstance(url, str) else None
    if size is None:
        return IMAGE_MOST_TOKENS
    return high_detail_tokens(*size)


def high_detail_tokens(width: int, height: int) -> int:
    """OpenAI's charge for a `width` x `height` image at high detail."""
    scaled_width, scaled_height = Fraction(width), Fraction(height)
    for most, side in ((2048, max), (768, min)):
        shrink = min(Fraction(1), most / side(scaled_width, scaled_height))
        scaled_width, scaled_height = scaled_width * shrink, scaled_height * shrink
    tiles = -(-scaled_width // 512) * -(-scaled_height // 512)
    return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * int(tiles)


def image_size(url: str) -> tuple[int, int] | None:
    """(width, height) of the image in a base64 data URL, from its header; None for any
    other URL or an image whose size cannot be read."""
    head, comma, data = url[: _HEADER_BASE64 + 200].partition(",")
    if not (comma and head.startswith("data:") and head.endswith(";base64")):
        return None
    usable = len(data) - len(data) % 4
    try:
        header = base64.b64decode(data[:usable])
    except (binascii.Error, ValueError):
        return None
    size = _header_size(header)
    if size is None or min(size) < 1:
        return None
    return size


def _header_size(data: bytes) -> tuple[int, int] | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
        return _big(data[16:20]), _big(data[20:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return _little(data[6:8]), _little(data[8:10])
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp_size(data)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30:
        return _little(data[26:28]) & 0x3FFF, _little(data[28:30]) & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = _little(data[21:25])
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        return _little(data[24:27]) + 1, _little(data[27:30]) + 1
    return None


_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
"""Start-of-frame markers, which hold the size; C4, C8 and CC are other segments."""
_JPEG_LONE_MARKERS = frozenset({0x01, *range(0xD0, 0xD9)})
"""Markers without a length after them."""


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
        elif marker in _JPEG_FRAMES:
            return _big(data[at + 7 : at + 9]), _big(data[at + 5 : at + 7])
        elif marker in _JPEG_LONE_MARKERS:
            at += 2
        else:
            at += 2 + _big(data[at + 2 : at + 4])
    return None


def _big(data: bytes) -> int:
    return int.from_bytes(data, "big")


def _little(data: bytes) -> int:
    return int.from_bytes(data, "little")


def reported_count(value: object) -> int | None:
    """A token count as a server sent it: an int, or a whole float (some servers send 12.0);
    None for anything else (null, a bool, text, a fraction)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def reply_tokens(reply: Message) -> int | None:
    """The tokens a reply's usage counts, None when the server reported none."""
    meta = reply.response_meta
    usage = meta.usage if meta is not None else None
    if usage is None:
        return None
    return usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
