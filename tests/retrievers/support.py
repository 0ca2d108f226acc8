"""What the retriever tests share: a small corpus and a search run sync or async."""

from __future__ import annotations

import asyncio

from chainkit.documents import Document
from chainkit.indexes import Hit
from chainkit.retrievers import Retriever
from tests.support.modes import Mode

CORPUS = [
    Document("The tortoise sleeps through the winter in a box of straw.", {"kind": "pet"}, "t"),
    Document(
        "Tortoises live longer than most pets, often past eighty years.", {"kind": "pet"}, "l"
    ),
    Document("A forecast of rain for Tuesday, then sun until the weekend.", {"kind": "news"}, "f"),
    Document("熊猫主要吃竹子，每天要吃十几个小时。", {"kind": "zh"}, "p"),
    Document("Bread rises because yeast turns sugar into gas.", {"kind": "food"}, "b"),
]


def ids(hits: list[Hit]) -> list[str]:
    return [hit.document.id for hit in hits]


def search(retriever: Retriever, query: object, mode: Mode) -> list[Hit]:
    """`retriever.search(query)`, or `asearch` awaited in an event loop of its own."""
    if mode.is_async:
        return asyncio.run(retriever.asearch(query))  # type: ignore[arg-type]
    return retriever.search(query)  # type: ignore[arg-type]
