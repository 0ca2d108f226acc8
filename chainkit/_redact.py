"""Masks secrets in what may reach a log, a trace, a repr or an error message: API keys in
text, the values of fields named like credentials, the credentials a URL may hold."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# Bounded quantifiers over disjoint character classes: linear time on any input.
_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_-]{4})[A-Za-z0-9_-]{4,200}|(Bearer )[^\s\"']{1,400}")
_KEY_ENV_VARS = ("OPENAI_API_KEY",)
MASK = "***"
# Values under names with a word that says they hold a credential, or carry headers, are
# never shown, at any depth (extra_body={"api_key": ...}); "max_tokens" is a count, not one.
_SECRET_WORDS = frozenset(
    (
        *("key", "apikey", "token", "secret", "password", "passwd", "auth", "authorization"),
        *("header", "headers", "cookie", "cookies", "credential", "credentials"),
    )
)
_WORD = re.compile(r"[a-z0-9]+")


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


def _names_a_secret(name: object) -> bool:
    return isinstance(name, str) and any(w in _SECRET_WORDS for w in _WORD.findall(name.lower()))


def mask_secret_fields(value: Any) -> Any:
    """`value` with the values under names that hold credentials masked, at any depth of
    mappings, lists and tuples (a mapping becomes a dict, a tuple a list)."""
    if isinstance(value, Mapping):
        return {
            name: MASK if _names_a_secret(name) else mask_secret_fields(item)
            for name, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [mask_secret_fields(item) for item in value]
    return value


def mask_url(url: str, key: str | None) -> str:
    """`url` with its user info and the values of its query masked, where credentials hide;
    it need not parse as a URL."""
    start = url.find("://")
    start = start + 3 if start >= 0 else 0
    ends = [i for i in (url.find(c, start) for c in "/?#") if i >= 0]
    end = min(ends, default=len(url))
    authority = url[start:end]
    if "@" in authority:
        authority = f"{MASK}@{authority.rpartition('@')[2]}"
    path, question, query = url[end:].partition("?")
    if question:
        fields = (field.partition("=") for field in query.split("&"))
        query = "&".join(f"{name}={MASK}" if equals else name for name, equals, _ in fields)
    return redact(f"{url[:start]}{authority}{path}{question}{query}", key)


def url_without_credentials(url: str) -> str:
    """`url` as an address to show: without its user info and query, where credentials ride
    (?api_key=...), and with key-shaped text masked."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return redact(urlunsplit((parts.scheme, host, parts.path, "", "")))
