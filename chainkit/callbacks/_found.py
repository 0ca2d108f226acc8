"""What a retrieval found, as the log and OpenTelemetry show it without its text: each
item's id and score. The items are a document retriever's hits (a document and its score),
or the tools a tool retriever selected (named, with no score); callbacks sit below both, so
they are read by their attributes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chainkit._redact import redact


def found_ids(found: Sequence[Any]) -> list[str]:
    """Each item's id: its document's id, else its own id or name, else its type's name."""
    ids = []
    for item in found:
        document = getattr(item, "document", item)
        name = getattr(document, "id", None)
        if not isinstance(name, str):
            name = getattr(item, "name", None)
        ids.append(redact(name) if isinstance(name, str) else type(item).__name__)
    return ids


def found_scores(found: Sequence[Any]) -> list[float] | None:
    """Each item's score; None when any has none (a tool)."""
    scores = []
    for item in found:
        score = getattr(item, "score", None)
        if isinstance(score, bool) or not isinstance(score, int | float):
            return None
        scores.append(float(score))
    return scores
