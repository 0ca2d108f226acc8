"""VectorMatrix: the unit vectors of an index's documents in one float32 buffer in this
process, scanned exactly for the ones nearest a query; numpy does the scan when installed.

Chosen by measurement (bench/bench_sql_index.py and a side script, 384 dimensions, Python
3.11, a 2-core machine shared with other work), a query's scan at 5,000 and 100,000 vectors:
pure Python over vectors held in memory 184 ms and 2.5 s; numpy (einsum, one thread) 1.1 ms
and 14 ms; merely reading the vectors from SQLite for each query 17 ms and 344 ms, so they
are read once and kept (2 s at 100,000, 150 MB); sqlite-vec's `vec0` KNN 7 ms and 69 ms,
through pysqlite3, as it is a loadable extension and this Python's stdlib sqlite3 (as many
are) is built without `enable_load_extension`. So: numpy when installed (an optional
accelerator, never a dependency), else pure Python; no sqlite-vec."""

from __future__ import annotations

import heapq
import struct
import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from chainkit._search.vectors import dot

__all__ = ["VectorMatrix", "numpy_scan", "packed"]

_NATIVE_IS_LITTLE = sys.byteorder == "little"


def packed(unit: Sequence[float]) -> bytes:
    """`unit` as little-endian float32, as the index's rows keep it."""
    return struct.pack(f"<{len(unit)}f", *unit)


class VectorMatrix:
    """The vectors of documents by id, in the order their rows were made (ties go to the
    earlier). A removed document leaves a hole, filled again when holes are half the rows.
    Not thread-safe: its owner holds a lock around every call."""

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions
        self._data = array("f")
        self._ids: list[str | None] = []
        self._positions: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._positions)

    def put(self, id_: str, blob: bytes) -> None:
        """Keeps the vector `blob` (as `packed` makes it) for `id_`, in its place if it has
        one."""
        vector = array("f", blob)
        if not _NATIVE_IS_LITTLE:
            vector.byteswap()
        position = self._positions.get(id_)
        if position is None:
            self._positions[id_] = len(self._ids)
            self._ids.append(id_)
            self._data.extend(vector)
        else:
            width = self.dimensions
            self._data[position * width : (position + 1) * width] = vector

    def remove(self, ids: Iterable[str]) -> None:
        for id_ in ids:
            position = self._positions.pop(id_, None)
            if position is not None:
                self._ids[position] = None
        if len(self._positions) * 2 < len(self._ids):
            self._compact()

    def vector(self, id_: str) -> list[float]:
        position = self._positions[id_]
        width = self.dimensions
        return self._data[position * width : (position + 1) * width].tolist()

    def nearest(
        self, unit: Sequence[float], depth: int, within: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """The `depth` ids (among `within`, when given) whose vectors' dot product with
        `unit` is the highest, with it, highest first (ties: the earlier row)."""
        positions: list[int] | None = None  # None: every row
        if within is not None:
            positions = sorted(self._positions[id_] for id_ in within if id_ in self._positions)
        elif len(self._positions) < len(self._ids):  # holes left by removals
            positions = [p for p, id_ in enumerate(self._ids) if id_ is not None]
        if not self._positions or positions == []:
            return []
        numpy = numpy_scan()
        if numpy is not None:
            return self._nearest_numpy(numpy, unit, depth, positions)
        width, data = self.dimensions, memoryview(self._data)
        scanned = range(len(self._ids)) if positions is None else positions
        scored = ((dot(data[p * width : (p + 1) * width], unit), -p) for p in scanned)
        best = heapq.nlargest(depth, scored)
        return [(self._id_at(-negative), score) for score, negative in best]

    def _nearest_numpy(
        self, numpy: Any, unit: Sequence[float], depth: int, positions: list[int] | None
    ) -> list[tuple[str, float]]:
        matrix = numpy.frombuffer(self._data, dtype=numpy.float32).reshape(-1, self.dimensions)
        query = numpy.asarray(unit, dtype=numpy.float32)
        # Every row's product, then the ones wanted: cheaper than copying those rows out.
        # einsum, not matmul: BLAS's threads, on a busy machine, took up to 20 times longer.
        scores = numpy.einsum("ij,j->i", matrix, query)
        chosen = numpy.arange(len(scores)) if positions is None else numpy.asarray(positions)
        if positions is not None:
            scores = scores[chosen]
        if depth < len(scores):  # the ones tying with the depth-th best are all kept
            threshold = numpy.partition(scores, len(scores) - depth)[len(scores) - depth]
            kept = numpy.flatnonzero(scores >= threshold)
        else:
            kept = numpy.arange(len(scores))
        order = kept[numpy.argsort(-scores[kept], kind="stable")][:depth]
        return [(self._id_at(int(chosen[i])), float(scores[i])) for i in order]

    def _id_at(self, position: int) -> str:
        id_ = self._ids[position]
        assert id_ is not None  # holes are never among the positions scanned
        return id_

    def _compact(self) -> None:
        width, old = self.dimensions, self._data
        self._data = array("f")
        kept = [id_ for id_ in self._ids if id_ is not None]
        for position, id_ in enumerate(kept):
            was = self._positions[id_]
            self._data.extend(old[was * width : (was + 1) * width])
            self._positions[id_] = position
        self._ids = list(kept)


def numpy_scan() -> Any:
    """numpy when installed (an optional accelerator: never a dependency), else None."""
    try:
        import numpy
    except ImportError:
        return None
    return numpy
