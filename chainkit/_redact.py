"""Masks API keys in text that may reach a log, a repr or an error message."""

from __future__ import annotations

import os
import re

# Bounded quantifiers over disjoint character classes: linear time on any input.
_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_-]{4})[A-Za-z0-9_-]{4,200}|(Bearer )[^\s\"']{1,400}")
_KEY_ENV_VARS = ("OPENAI_API_KEY",)
MASK = "***"


def mask_key(key: str | None) -> str:
    """A key as it may be shown: never more than its first four characters."""
    if not key:
        return "None"
    return f"{key[:4]}{MASK}" if len(key) > 8 else MASK


def redact(text: str, *secrets: str | None) -> str:
    """`text` with the given secrets, OPENAI_API_KEY and anything shaped like a key masked."""
    for secret in (*secrets, *(os.environ.get(name) for name in _KEY_ENV_VARS)):
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, mask_key(secret))
    if "sk-" in text or "Bearer " in text:
        text = _KEY_PATTERN.sub(lambda m: f"{m.group(1) or m.group(2)}{MASK}", text)
    return text
