"""CurrentTime: the current date, time and weekday, in UTC or in a named time zone."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from chainkit._text import quoted
from chainkit.tools._input import normalized
from chainkit.tools.base import Tool, ToolError

# strftime("%A") follows the process locale; the model should always see the same names.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MAX_ZONE_LENGTH = 64
_MAX_OFFSET = timedelta(hours=14)
# Keys that name no place: the machine's own zone file, and tzdata's placeholder.
_NOT_ZONES = frozenset(("localtime", "Factory", "posixrules"))
# Words of a sentence that may name a zone: "Asia/Shanghai", "UTC+8", "GMT-05:30", "Japan".
_WORD = re.compile(r"[A-Za-z0-9_+\-:/]+")
_SPACED_OFFSET = re.compile(r"\b(UTC|GMT)\s*([+-])\s*(?=\d)", re.IGNORECASE)
_HOW_TO_NAME_ONE = (
    "give an IANA name such as 'Asia/Shanghai', 'America/New_York' or 'UTC', a city such as "
    "'Tokyo', an offset such as 'UTC+8' or '-05:30', or nothing for UTC"
)


class CurrentTime(Tool):
    """Returns e.g. "2025-03-14T15:09:26+08:00 Friday (Asia/Shanghai)".

    The input may name an IANA time zone in any case ("Asia/Shanghai", "asia/shanghai",
    "Japan"), a city that ends an IANA name ("Tokyo", "new york"), or a fixed offset ("UTC+8",
    "GMT-05:30", "+08:00"), alone or within other words ("time in asia/shanghai please").
    Without one the time is given in UTC, labelled so: the machine's own zone says nothing
    about the user's. A zone meant but unknown ("Asia/Shangai", "UTC+99") is a ToolError that
    says how to write one, with the nearest known names. The input is read as every built-in
    tool reads its input (NFKC). `clock` returns the current time (an aware datetime, or a
    naive one taken as the machine's local time); tests pass a fixed one.
    """

    name = "current_time"
    input_required = False  # without one: UTC
    blocking = False
    description = (
        "Returns the current date, time and weekday. Input: the user's time zone as an IANA "
        'name such as "Asia/Shanghai" or "America/New_York", or an offset such as "UTC+8"; '
        "without one the time is given in UTC."
    )

    def __init__(self, *, clock: Callable[[], datetime] | None = None) -> None:
        self._clock = clock or _now

    def call(self, input: str) -> str:
        zone = parse_zone(input) or UTC
        now = self._clock().astimezone(zone)
        return f"{now.isoformat(timespec='seconds')} {_WEEKDAYS[now.weekday()]} ({zone})"


def _now() -> datetime:
    return datetime.now(UTC)


def parse_zone(text: str) -> tzinfo | None:
    """The time zone `text` names; None when it names none; ToolError for one meant but
    unknown."""
    text = normalized(text).strip().strip("\"'`").strip()
    if not text:
        return None
    if len(text) <= _MAX_ZONE_LENGTH:
        zone = _fixed_offset(text) or _zone(text) or _city_zone(text)
        if zone is not None:
            return zone
    if not any(char.isspace() for char in text) and _meant_as_zone(text):
        raise _unknown_zone(text)
    return _zone_in_sentence(text)


def _zone_in_sentence(text: str) -> tzinfo | None:
    """The zone a word of `text` names ("time in asia/shanghai please"): an IANA name with a
    "/" in any case, an offset after UTC or GMT, or another IANA name (Japan, UTC) written as
    IANA writes it, since lower-case words ("turkey") are words."""
    meant: str | None = None
    for word in _WORD.findall(_SPACED_OFFSET.sub(r"\1\2", text)):
        word = word.strip(":-")
        if len(word) > _MAX_ZONE_LENGTH:
            continue
        upper = word.upper()
        if upper.startswith(("UTC", "GMT")) and upper[3:4] in ("+", "-"):
            zone: tzinfo | None = _fixed_offset(word)
        elif "/" in word:
            zone = _known(_keys().get(word.lower()))
            if zone is None and meant is None and word.partition("/")[0].lower() in _areas():
                meant = word
        else:
            exact = _keys().get(word.lower()) == word or upper in ("UTC", "GMT")
            zone = _zone(word) if exact else None
        if zone is not None:
            return zone
    if meant is not None:
        raise _unknown_zone(meant)
    return None


def _unknown_zone(name: str) -> ToolError:
    near = []
    if len(name) <= _MAX_ZONE_LENGTH:
        near = difflib.get_close_matches(name.lower(), _keys(), n=3, cutoff=0.8)
    suggestion = f" (did you mean {', '.join(_keys()[key] for key in near)}?)" if near else ""
    return ToolError(f"unknown time zone {quoted(name, 60)}{suggestion}: {_HOW_TO_NAME_ONE}")


def _zone(name: str) -> ZoneInfo | None:
    """The IANA zone `name` names, in any case."""
    if name in _NOT_ZONES:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # ValueError: not a valid key at all ("../x"); OSError: a directory such as "Asia".
        return _known(_keys().get(name.lower()))


def _known(key: str | None) -> ZoneInfo | None:
    return None if key is None else ZoneInfo(key)


@functools.cache
def _keys() -> dict[str, str]:
    """The IANA keys of this machine's time zone data by their lower-case form (none without
    tzdata)."""
    return {key.lower(): key for key in sorted(available_timezones() - _NOT_ZONES)}


@functools.cache
def _areas() -> frozenset[str]:
    """The lower-case areas IANA keys begin with ("asia"): "asia/shangai" was meant as a zone,
    "and/or" was not."""
    return frozenset(key.partition("/")[0] for key in _keys() if "/" in key)


@functools.cache
def _cities() -> dict[str, str]:
    """IANA keys by the lower-case city that ends them ("new york"); the first key in sorted
    order wins where several end alike (the others are aliases)."""
    cities: dict[str, str] = {}
    for lower, key in _keys().items():
        if "/" in lower:
            cities.setdefault(lower.rpartition("/")[2].replace("_", " "), key)
    return cities


def _city_zone(name: str) -> ZoneInfo | None:
    return _known(_cities().get(" ".join(name.replace("_", " ").split()).lower()))


def _meant_as_zone(name: str) -> bool:
    """Whether an unknown `name` was meant as a zone ("Asia/Shangai", "PST8", "UTC+99")
    rather than as text ("now", "today")."""
    return "/" in name or name.isupper() or name.upper().startswith(("UTC", "GMT", "+", "-"))


def _fixed_offset(name: str) -> timezone | None:
    """ "UTC+8", "GMT-05:30", "+0800" as a fixed offset; None if `name` is not one."""
    rest = name.upper()
    rest = rest.removeprefix("UTC") if rest.startswith("UTC") else rest.removeprefix("GMT")
    if rest[:1] not in ("+", "-"):
        return None
    sign, digits = rest[0], rest[1:]
    hours, colon, minutes = digits.partition(":")
    if not colon and len(hours) == 4:
        hours, minutes = hours[:2], hours[2:]
    minutes = minutes or "00"
    if not (hours.isdigit() and len(hours) <= 2 and minutes.isdigit() and len(minutes) == 2):
        return None
    offset = timedelta(hours=int(hours), minutes=int(minutes))
    if offset > _MAX_OFFSET or int(minutes) >= 60:
        raise ToolError(
            f"time zone offset {name!r} is out of range (at most ±14:00): {_HOW_TO_NAME_ONE}"
        )
    label = f"UTC{sign}{int(hours):02d}:{minutes}"
    return timezone(-offset if sign == "-" else offset, label)
