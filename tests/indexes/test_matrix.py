"""VectorMatrix, SQLite's scan of vectors in memory: the nearest by dot product, ties to the
earlier row, holes left by removals skipped and filled; numpy's scan, when installed, finds
what pure Python's does."""

from __future__ import annotations

import random
import sys

import pytest

from chainkit.indexes._matrix import VectorMatrix, numpy_scan, packed


def filled(count: int, seed: int = 5) -> tuple[VectorMatrix, list[list[float]]]:
    rng = random.Random(seed)
    vectors = [[rng.uniform(-1, 1) for _ in range(6)] for _ in range(count)]
    matrix = VectorMatrix(6)
    for i, vector in enumerate(vectors):
        matrix.put(str(i), packed(vector))
    return matrix, vectors


def test_the_nearest_come_first_and_ties_go_to_the_earlier_row():
    matrix = VectorMatrix(2)
    for id_, vector in [("a", [1.0, 0.0]), ("b", [0.0, 1.0]), ("c", [1.0, 0.0])]:
        matrix.put(id_, packed(vector))

    assert [id_ for id_, _ in matrix.nearest([1.0, 0.0], 3)] == ["a", "c", "b"]
    assert [id_ for id_, _ in matrix.nearest([1.0, 0.0], 2, within={"c", "b", "x"})] == [
        "c",
        "b",
    ]
    matrix.put("a", packed([0.0, 1.0]))  # replaced in its place
    assert [id_ for id_, _ in matrix.nearest([0.0, 1.0], 2)] == ["a", "b"]


def test_removed_rows_are_never_found_and_their_holes_are_filled():
    matrix, vectors = filled(10)
    matrix.remove(["0", "1", "2"])
    assert len(matrix) == 7
    assert all(id_ not in {"0", "1", "2"} for id_, _ in matrix.nearest(vectors[0], 10))
    matrix.remove(["3", "4", "5"])  # now more holes than rows: compacted
    assert sorted(id_ for id_, _ in matrix.nearest(vectors[0], 10)) == ["6", "7", "8", "9"]
    assert matrix.vector("9") == pytest.approx(vectors[9], abs=1e-6)
    matrix.remove(["6", "7", "8", "9"])
    assert matrix.nearest(vectors[0], 3) == []


def test_numpys_scan_finds_what_pure_pythons_does(monkeypatch: pytest.MonkeyPatch):
    if numpy_scan() is None:
        pytest.skip("numpy is not installed: the pure Python scan is the only one")
    matrix, vectors = filled(300)
    matrix.remove([str(i) for i in range(0, 300, 7)])
    queries = [(vectors[3], None), (vectors[50], {str(i) for i in range(0, 300, 3)})]
    by_numpy = [matrix.nearest(query, 12, within) for query, within in queries]
    monkeypatch.setitem(sys.modules, "numpy", None)
    by_python = [matrix.nearest(query, 12, within) for query, within in queries]

    for numpys, pythons in zip(by_numpy, by_python, strict=True):
        assert [id_ for id_, _ in numpys] == [id_ for id_, _ in pythons]
        assert [score for _, score in numpys] == pytest.approx([s for _, s in pythons], 1e-5)
