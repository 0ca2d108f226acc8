"""Loading every file of a folder that a glob pattern matches, lazily, in a stable order: each
file by the loader its suffix names (text for the rest); files that are no text (binary,
larger than the limit, unreadable links) passed by and reported, never a hang on a link that
loops back."""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal

from chainkit.documents._reading import DEFAULT_MAX_BYTES, check_encoding
from chainkit.documents.document import Document
from chainkit.documents.errors import (
    BinaryFileError,
    DocumentValueError,
    ExtraMissingError,
    FileTooLargeError,
    LoadError,
)
from chainkit.documents.html import load_html
from chainkit.documents.pdf import load_pdf
from chainkit.documents.text import load_markdown, load_text

_log = logging.getLogger("chainkit.documents")

Loader = Callable[[Path], Iterable[Document]]
"""What loads one file: a path in, its documents out."""


@dataclass(frozen=True)
class Skipped:
    """A file (or folder) a DirectoryLoader passed by, and why."""

    path: str
    reason: str


class DirectoryLoader:
    """The documents of the files under `path` whose path relative to it matches `glob`
    (`*` within a name, `**/` any depth of folders: `"**/*.md"`), read as they are iterated,
    in a stable order (a folder's files by name, then its folders by name). Each file goes
    to the loader `loaders` names for its suffix (by default Markdown, HTML, PDF and text); a
    file of any other suffix is read as text.

    Files that are empty, hold binary data, are pipes or devices, are larger than
    `max_bytes`, or need an extra that is not installed (a PDF without pypdf) are passed by
    and listed in `skipped` (and logged), as are folders reached again through a link (a
    loop) and links to nothing. A file that cannot be decoded raises its LoadError, or with
    `on_error="skip"` is passed by and listed too."""

    def __init__(
        self,
        path: str | Path,
        glob: str = "**/*",
        *,
        loaders: Mapping[str, Loader] | None = None,
        encoding: str | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        on_error: Literal["raise", "skip"] = "raise",
    ) -> None:
        check_encoding(encoding)
        if on_error not in ("raise", "skip"):
            raise DocumentValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
        self.path = Path(path)
        self.glob = glob
        self._pattern = _glob_pattern(glob)
        self._top_level_only = "/" not in glob and "**" not in glob
        self._loaders = _default_loaders(encoding, max_bytes) if loaders is None else dict(loaders)
        self._fallback: Loader = partial(load_text, encoding=encoding, max_bytes=max_bytes)
        self._on_error = on_error
        self.skipped: list[Skipped] = []
        """What the last iteration passed by, in the order met."""

    def __iter__(self) -> Iterator[Document]:
        self.skipped = []
        if not self.path.is_dir():
            raise LoadError(self.path, "is not a folder")
        for file in self._files(self._skip):
            loader = self._loaders.get(file.suffix.lower(), self._fallback)
            try:
                yield from loader(file)
            except ExtraMissingError as error:
                self._skip(file, str(error))
            except LoadError as error:
                expected = isinstance(error, BinaryFileError | FileTooLargeError)
                if not expected and self._on_error == "raise":
                    raise
                self._skip(file, _within_file(error))

    def files(self) -> Iterator[Path]:
        """The files an iteration would hand to a loader, in its order, listed without being
        read (a count ahead of a long load, for a progress bar); `skipped` is left as it is.
        Files that turn out to hold no text when read are among them."""
        if not self.path.is_dir():
            raise LoadError(self.path, "is not a folder")
        return self._files(lambda path, reason: None)

    def covers(self, path: str | Path) -> bool:
        """Whether `path` names a file this loader would read: one within its folder that its
        glob matches, whatever the file holds (incremental indexing deletes no other)."""
        try:
            relative = Path(path).relative_to(self.path)
        except ValueError:
            return False
        return self._pattern.fullmatch(relative.as_posix()) is not None

    def _files(self, skip: Callable[[Path, str], None]) -> Iterator[Path]:
        seen_folders: set[tuple[int, int]] = set()
        seen_files: set[tuple[int, int]] = set()

        def unreadable(error: OSError) -> None:
            skip(Path(error.filename or self.path), f"cannot be listed: {error.strerror}")

        for folder, folders, files in os.walk(self.path, onerror=unreadable, followlinks=True):
            try:
                here = os.stat(folder)
            except OSError as error:  # gone since its parent was listed
                folders.clear()
                skip(Path(folder), f"cannot be listed: {error.strerror}")
                continue
            if (here.st_dev, here.st_ino) in seen_folders:
                folders.clear()
                skip(Path(folder), "a link to a folder already read (a loop, or a copy)")
                continue
            seen_folders.add((here.st_dev, here.st_ino))
            if self._top_level_only:
                folders.clear()
            folders.sort()
            for name in sorted(files):
                file = Path(folder, name)
                relative = file.relative_to(self.path).as_posix()
                if not self._pattern.fullmatch(relative):
                    continue
                try:
                    status = file.stat()
                except OSError as error:
                    skip(file, f"cannot be read: {error.strerror or 'a link to nothing'}")
                    continue
                if not stat.S_ISREG(status.st_mode):
                    skip(file, "not a regular file (a pipe, device or socket)")
                    continue
                if status.st_size == 0:
                    skip(file, "empty")
                    continue
                if (status.st_dev, status.st_ino) in seen_files:
                    skip(file, "a link to a file already read")
                    continue
                seen_files.add((status.st_dev, status.st_ino))
                yield file

    def _skip(self, path: Path, reason: str) -> None:
        _log.warning("skipped %s: %s", path, reason)
        self.skipped.append(Skipped(str(path), reason))


def _within_file(error: LoadError) -> str:
    """What went wrong where in the file, without the file's name (a skip names it)."""
    where = [f"line {error.line}"] if error.line is not None else []
    where += [f"page {error.page}"] if error.page is not None else []
    return ": ".join([", ".join(where), error.reason] if where else [error.reason])


def _default_loaders(encoding: str | None, max_bytes: int) -> dict[str, Loader]:
    markdown = partial(load_markdown, encoding=encoding, max_bytes=max_bytes)
    html = partial(load_html, encoding=encoding, max_bytes=max_bytes)
    return {".md": markdown, ".markdown": markdown, ".html": html, ".htm": html, ".pdf": load_pdf}


def _glob_pattern(glob: str) -> re.Pattern[str]:
    """`glob` as a regular expression over a relative POSIX path: `**/` any folders (or
    none), `**` anything, `*` and `?` within one name; the rest literal."""
    if not isinstance(glob, str) or not glob:
        raise DocumentValueError("glob must be a non-empty pattern such as '**/*.md'")
    parts = []
    index = 0
    while index < len(glob):
        if glob.startswith("**/", index):
            parts.append("(?:[^/]*/)*")
            index += 3
        elif glob.startswith("**", index):
            parts.append(".*")
            index += 2
        elif glob[index] == "*":
            parts.append("[^/]*")
            index += 1
        elif glob[index] == "?":
            parts.append("[^/]")
            index += 1
        else:
            parts.append(re.escape(glob[index]))
            index += 1
    return re.compile("".join(parts))
