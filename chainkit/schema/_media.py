"""The image and the file given to a model, defined once for both message kinds: a Message's
`ImagePart` / `FilePart` and an AgenticMessage's `UserInputImage` / `UserInputFile` are
these payloads under the names each kind uses, with the same fields and checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from chainkit.schema._check import OPTIONAL_STR, check_fields, split_data_url, wrong
from chainkit.schema.errors import MessageFormatError

_IMAGE_FIELDS = tuple((name, OPTIONAL_STR, "a str or None") for name in ("url", "detail"))
_MEDIA_FIELDS = tuple(
    (name, OPTIONAL_STR, "a str or None") for name in ("base64_data", "mime_type")
)
_FILE_FIELDS = tuple((name, OPTIONAL_STR, "a str or None") for name in ("file_id", "filename"))


def _check_image(image: ImagePayload) -> None:
    """Checks an image, and turns a base64 data URL in `url` into its `base64_data` and
    `mime_type`."""
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


def _check_file(file: FilePayload) -> None:
    check_fields(file, _MEDIA_FIELDS + _FILE_FIELDS)
    owner = type(file).__name__
    if file.base64_data is None and file.file_id is None:
        raise MessageFormatError(f"{owner} needs base64_data or file_id", field="base64_data")
    _check_mime_type(owner, file.mime_type)


def _check_mime_type(owner: str, mime_type: str | None) -> None:
    # A comma would end the media type early inside a data URL.
    if mime_type is not None and (not mime_type or "," in mime_type):
        raise wrong(owner, "mime_type", "None or a media type such as 'image/png'", mime_type)


@dataclass(slots=True)
class ImagePayload:
    """An image: a URL, or base64 data with its MIME type.

    A base64 data URL given as `url` is kept as `base64_data` and `mime_type`, the form the
    wire shape comes back in, so both spellings of one image are equal.
    """

    url: str | None = None
    base64_data: str | None = None
    mime_type: str | None = None
    detail: str | None = None

    def __post_init__(self) -> None:
        _check_image(self)


@dataclass(slots=True)
class FilePayload:
    """A file, as base64 data or a server-side file id."""

    base64_data: str | None = None
    file_id: str | None = None
    filename: str | None = None
    mime_type: str | None = None

    def __post_init__(self) -> None:
        _check_file(self)
