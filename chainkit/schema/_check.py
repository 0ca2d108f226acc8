"""Shape checks shared by the schema types, and the error they raise.

Every schema type checks its fields when built. The first test is one `if` over exact-type
comparisons (a few nanoseconds a field, since Message and AgentAction are built on every agent
step); only when it fails do the functions here run, to find the bad field and name it with
what was expected and what was given. A subclass of an expected type fails the quick test and
passes these, so it is accepted, only more slowly.
"""

from __future__ import annotations

import reprlib
from collections.abc import Collection, Iterable
from typing import Any

from chainkit.schema.errors import MessageFormatError

NONE = type(None)
OPTIONAL_STR = (str, NONE)
OPTIONAL_DICT = (dict, NONE)

# (field, accepted types, what to call them in an error)
FieldSpec = tuple[str, tuple[type, ...], str]


def shown(value: object) -> str:
    """`value` as an error message shows what was given: a short repr and its type."""
    if value is None:
        return "None"
    return f"{reprlib.repr(value)} ({type(value).__name__})"


def wrong(owner: str, field: str, expected: str, value: object) -> MessageFormatError:
    message = f"{owner}.{field} must be {expected}, got {shown(value)}"
    return MessageFormatError(message, field=field)


def check_fields(owner: object, specs: Iterable[FieldSpec]) -> None:
    """Raises naming the first field of `owner` whose value is not of its accepted types; a
    bool is never taken for an int."""
    for field, types, expected in specs:
        value = getattr(owner, field)
        if not isinstance(value, types) or (type(value) is bool and bool not in types):
            raise wrong(type(owner).__name__, field, expected, value)


def check_items(owner: object, field: str, types: type | tuple[type, ...], expected: str) -> None:
    """Raises naming the first item of the list `owner.<field>` that is not of `types`."""
    for position, item in enumerate(getattr(owner, field)):
        if not isinstance(item, types):
            raise wrong(type(owner).__name__, f"{field}[{position}]", expected, item)


def check_sequence(function: str, argument: str, items: object, kind: type) -> None:
    """Raises unless `items`, an argument of `function`, is a list or tuple of `kind`."""
    if not isinstance(items, list | tuple):
        raise wrong(function, argument, f"a list of {kind.__name__}", items)
    for position, item in enumerate(items):
        if not isinstance(item, kind):
            raise wrong(function, f"{argument}[{position}]", f"a {kind.__name__}", item)


def check_choice(owner: str, field: str, value: object, choices: Collection[str]) -> None:
    try:
        if value in choices:
            return
    except TypeError:  # unhashable: not a choice either
        pass
    raise wrong(owner, field, f"one of {', '.join(map(repr, sorted(choices)))}", value)


def mapping(owner: str, field: str | None, value: object) -> dict[str, Any]:
    """`value` when it is a dict, as the wire shape needs; MessageFormatError otherwise. A field
    of None means `value` is the whole input of `<owner>.from_dict`."""
    if isinstance(value, dict):
        return value
    if field is None:
        raise MessageFormatError(f"{owner}.from_dict needs a dict, got {shown(value)}")
    raise wrong(owner, field, "a dict", value)


_IMAGE_FIELDS = tuple((name, OPTIONAL_STR, "a str or None") for name in ("url", "detail"))
_MEDIA_FIELDS = tuple(
    (name, OPTIONAL_STR, "a str or None") for name in ("base64_data", "mime_type")
)
_FILE_FIELDS = tuple((name, OPTIONAL_STR, "a str or None") for name in ("file_id", "filename"))


def check_image(image: Any) -> None:
    """Checks an ImagePart or UserInputImage, and turns a base64 data URL in `url` into its
    `base64_data` and `mime_type`."""
    check_fields(image, _IMAGE_FIELDS + _MEDIA_FIELDS)
    owner = type(image).__name__
    if (image.url is None) == (image.base64_data is None):
        raise MessageFormatError(f"{owner} needs either url or base64_data, not both", field="url")
    if image.url is not None:
        if not image.url:
            raise wrong(owner, "url", "a non-empty str", image.url)
        inline = split_data_url(image.url)
        if inline is not None and inline[0]:
            if image.mime_type is not None and image.mime_type != inline[0]:
                raise MessageFormatError(
                    f"{owner}.mime_type {image.mime_type!r} contradicts the data URL's "
                    f"{inline[0]!r}",
                    field="mime_type",
                )
            image.url = None
            image.mime_type, image.base64_data = inline
    if image.base64_data is not None and not image.mime_type:
        raise MessageFormatError(f"{owner} with base64_data needs its mime_type", field="mime_type")
    _check_mime_type(owner, image.mime_type)


def check_file(file: Any) -> None:
    """Checks a FilePart or UserInputFile."""
    check_fields(file, _MEDIA_FIELDS + _FILE_FIELDS)
    owner = type(file).__name__
    if file.base64_data is None and file.file_id is None:
        raise MessageFormatError(f"{owner} needs base64_data or file_id", field="base64_data")
    _check_mime_type(owner, file.mime_type)


def _check_mime_type(owner: str, mime_type: str | None) -> None:
    # A comma would end the media type early inside a data URL.
    if mime_type is not None and (not mime_type or "," in mime_type):
        raise wrong(owner, "mime_type", "None or a media type such as 'image/png'", mime_type)


def split_data_url(url: str) -> tuple[str, str] | None:
    """`data:<mime>;base64,<data>` -> (mime, data); None for any other URL."""
    if not url.startswith("data:"):
        return None
    header, sep, payload = url[5:].partition(",")
    if not sep or not header.endswith(";base64"):
        return None
    return header[: -len(";base64")], payload
