"""Masks secrets in what may reach a log, a trace, a repr or an error message: API keys in
text, the values of fields named like credentials, the credentials a URL may hold, and keys in
a text that arrives in pieces (a streamed reply)."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# Names of headers and settings whose value, written after ":" or "=", is a credential; the
# value is masked up to the next space, quote or separator ("Authorization: Bearer x" whole).
_CREDENTIAL_NAMES = (
    r"(?:proxy-)?authorization|(?:x-)?api[-_]?key|access[-_]?token|refresh[-_]?token"
    r"|client[-_]?secret|secret[-_]?key|password|passwd"
)
_CREDENTIAL_VALUE = r"(?i:(?:bearer|basic|token|digest) {1,5})?[^\s\"'\\,;&]{1,400}"
# Bounded quantifiers over disjoint character classes: linear time on any input.
_KEY_PATTERN = re.compile(r"\bsk-[A-Za-z0-9_-]{8,204}|(Bearer )[^\s\"']{1,400}")
_CREDENTIAL_PATTERN = re.compile(
    rf"((?i:(?<![a-z0-9])(?:{_CREDENTIAL_NAMES})\\?[\"']?[ \t]{{0,20}}[:=][ \t]{{0,20}}"
    rf"\\?[\"']?)){_CREDENTIAL_VALUE}"
)
# A credential's name and separator (and scheme) with its value still to come: in a text that
# arrives in pieces, it is held back with what follows.
_CREDENTIAL_STARTED = re.compile(
    rf"(?i:(?<![a-z0-9])(?:{_CREDENTIAL_NAMES})\\?[\"']?[ \t]{{0,20}}(?:[:=][ \t]{{0,20}}"
    r"\\?[\"']?(?:(?:bearer|basic|token|digest) {0,5})?)?|\bBearer {0,5})\Z"
)
_KEY_ENV_VARS = ("OPENAI_API_KEY",)
MIN_KEY_CHARS = 8
"""Shorter keys ("EMPTY", "ollama": what local servers take) are no secret, and masking them
would hide those words wherever they appear."""
MASK = "***"
_configured_keys: set[str] = set()


def remember_key(key: str | None) -> None:
    """Masks `key` (a model's configured API key) wherever text is masked in this process from
    now on: in the trace and log of any run, not only in its model's error messages."""
    if key and len(key) >= MIN_KEY_CHARS:
        _configured_keys.add(key)


def mask_key(key: str | None) -> str:
    """A key as it may be shown: never more than its first four characters."""
    if not key:
        return "None"
    return f"{key[:4]}{MASK}" if len(key) > 8 else MASK


def redact(text: str, *secrets: str | None) -> str:
    """`text` with the given secrets, OPENAI_API_KEY, the keys models were configured with,
    anything shaped like a key and the values of credential headers masked."""
    for secret in (*secrets, *(os.environ.get(name) for name in _KEY_ENV_VARS)):
        if secret and len(secret) >= MIN_KEY_CHARS and secret in text:
            text = text.replace(secret, mask_key(secret))
    for secret in tuple(_configured_keys):  # a copy: another thread may add one
        if secret in text:
            text = text.replace(secret, mask_key(secret))
    if "sk-" in text or "Bearer " in text:
        text = _KEY_PATTERN.sub(_masked_key, text)
    if _may_name_a_credential(text.lower()):
        text = _CREDENTIAL_PATTERN.sub(_masked, text)
    return text


def _may_name_a_credential(lowered: str) -> bool:
    """Whether `lowered` holds what every credential name does: a look far faster than the
    pattern's."""
    return (
        "key" in lowered
        or "token" in lowered
        or "authoriz" in lowered
        or "passw" in lowered
        or "secret" in lowered
    )


def _masked(match: re.Match[str]) -> str:
    return f"{match.group(1)}{MASK}"


def _masked_key(match: re.Match[str]) -> str:
    # A key is shown as mask_key shows it, however it was found: the same key reads the same
    # in every line, whether or not a model was configured with it.
    return f"{match.group(1)}{MASK}" if match.group(1) else mask_key(match.group(0))


# A name holds a credential when one of its words says so anywhere ("db_password"), or when it
# ends in "key" or "token" ("api_key", "accessToken") unless the word before names an ordinary
# kind of key or token ("sort_key", "eos_token"); "key_points" and "max_tokens" are no secret.
_CREDENTIAL_WORDS = frozenset(
    (
        *("password", "passwd", "passphrase", "secret", "secrets", "signature", "apikey"),
        *("auth", "authorization", "credential", "credentials", "cookie", "cookies"),
    )
)
_LAST_CREDENTIAL_WORDS = frozenset(("key", "token"))
_ORDINARY_KINDS = frozenset(
    (
        *("sort", "primary", "foreign", "cache", "partition", "idempotency", "group", "hash"),
        *("routing", "shard", "lookup", "dedup", "unique", "composite", "index", "row"),
        *("eos", "bos", "pad", "unk", "sep", "cls", "stop", "special", "page", "next"),
    )
)
# Words of a name in any case style: "x-api-key", "apiKey", "APIKey", "OPENAI_API_KEY".
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _names_a_secret(name: object) -> bool:
    return isinstance(name, str) and _is_credential_name(name)


@functools.lru_cache(maxsize=1024)  # a run names the same few options over and over
def _is_credential_name(name: str) -> bool:
    words = [word.lower() for word in _WORD.findall(name)]
    if any(word in _CREDENTIAL_WORDS for word in words):
        return True
    return (
        bool(words)
        and words[-1] in _LAST_CREDENTIAL_WORDS
        and (len(words) == 1 or words[-2] not in _ORDINARY_KINDS)
    )


def mask_secret_fields(value: Any) -> Any:
    """`value` with the values under names that hold credentials masked, at any depth of
    mappings, lists and tuples (a mapping becomes a dict, a tuple a list); a header given as
    a (name, value) pair counts as a field."""
    if isinstance(value, Mapping):
        return {
            name: MASK if _names_a_secret(name) else mask_secret_fields(item)
            for name, item in value.items()
        }
    if isinstance(value, list | tuple):
        if len(value) == 2 and isinstance(value[1], str) and _names_a_secret(value[0]):
            return [value[0], MASK]
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


_HELD_CHARS_LIMIT = 8192


class PieceMasker:
    """Masks secrets in a text that arrives in pieces, such as a streamed reply, so that
    joining what it gives back shows no more than `redact` of the whole text would.

    A key holds no whitespace: `feed` gives back the text up to its last whitespace, masked,
    and holds the last word back until the next piece, or `flush` at the end, shows where it
    ends; a credential's name and separator (`Authorization: Bearer `) are held back with
    their value. A word longer than 8,192 characters is given back masked as it is.
    """

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        """What can be shown now of the text so far, masked."""
        text = self._held + piece
        cut = max(text.rfind(space) for space in (" ", "\n", "\t", "\r")) + 1
        # A credential's name, separator and scheme take fewer than 100 characters.
        started = _CREDENTIAL_STARTED.search(text, max(cut - 100, 0), cut) if cut else None
        if started is not None:
            cut = started.start()
        if len(text) - cut > _HELD_CHARS_LIMIT:
            cut = len(text)
        self._held = text[cut:]
        return redact(text[:cut]) if cut else ""

    def flush(self) -> str:
        """The text held back, masked: the pieces are over."""
        text, self._held = self._held, ""
        return redact(text)
