"""Folders of text files made for a test, as a loader or `chainkit index` reads them."""

from __future__ import annotations

from pathlib import Path


def write(folder: Path, files: dict[str, str]) -> None:
    """Writes each file (a path within `folder`, its folders made) with its UTF-8 text."""
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
