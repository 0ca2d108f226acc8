"""A stream's pieces ready at once go out as one write; the source stays bounded and closed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from chainkit.serving._batches import BACKLOG, batched


async def bursts(*sizes: int) -> AsyncGenerator[bytes, None]:
    """Pieces in bursts of `sizes`, the loop let run between bursts."""
    for number, size in enumerate(sizes):
        for piece in range(size):
            yield f"{number}.{piece};".encode()
        await asyncio.sleep(0)


def test_pieces_ready_at_once_are_joined_in_order() -> None:
    async def read() -> list[bytes]:
        return [joined async for joined in batched(bursts(3, 1, 2))]

    assert asyncio.run(read()) == [b"0.0;0.1;0.2;", b"1.0;", b"2.0;2.1;"]


def test_what_the_source_raises_is_raised_after_what_it_gave() -> None:
    async def failing() -> AsyncGenerator[bytes, None]:
        yield b"a"
        await asyncio.sleep(0)
        raise ValueError("the source broke")

    async def read(taken: list[bytes]) -> None:
        stream = batched(failing())
        taken.append(await anext(stream))
        await anext(stream)

    taken: list[bytes] = []
    with pytest.raises(ValueError, match="the source broke"):
        asyncio.run(read(taken))
    assert taken == [b"a"]


def test_a_reader_that_stops_closes_the_source_and_holds_at_most_the_backlog() -> None:
    pulled: list[int] = []
    closed = asyncio.Event()

    async def endless() -> AsyncGenerator[bytes, None]:
        try:
            while True:
                pulled.append(1)
                yield b"x"
        finally:
            closed.set()

    async def read_one_then_stall() -> None:
        stream = batched(endless())
        first = await anext(stream)
        for _ in range(10 * BACKLOG):  # the reader is slow: the source must wait for it
            await asyncio.sleep(0)
        assert len(pulled) <= len(first) + BACKLOG + 1
        await stream.aclose()
        assert closed.is_set()

    asyncio.run(read_one_then_stall())
