"""pgvector in the real PostgreSQL, through the store layer: the extension the retrieval index
needs is there (`CREATE EXTENSION IF NOT EXISTS vector` succeeds as the test user), and a
cosine-distance search (`<=>`) answered by an hnsw or ivfflat index returns the nearest rows."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator

import pytest

from chainkit._store import Cursor, Database, open_database
from tests.support.pgvector import pgvector_dsn

# Rows at every 6 degrees around the circle, their lengths varied so that the nearest by
# cosine differ from the nearest by Euclidean distance; the query lies between them at 100
# degrees, so each row's cosine distance differs from the next by a clear margin.
ANGLES = range(0, 360, 6)
QUERY_ANGLE = 100
NEAREST = 4


def _point(degrees: float, length: float) -> list[float]:
    radians = math.radians(degrees)
    return [length * math.cos(radians), length * math.sin(radians)]


def _literal(point: list[float]) -> str:
    return "[" + ",".join(repr(x) for x in point) + "]"


def _rows() -> list[tuple[int, list[float]]]:
    return [(angle, _point(angle, 1 + angle % 7)) for angle in ANGLES]


def _nearest_by_cosine(query: list[float]) -> list[int]:
    def distance(point: list[float]) -> float:
        dot = sum(a * b for a, b in zip(point, query, strict=True))
        return 1 - dot / (math.hypot(*point) * math.hypot(*query))

    return [angle for angle, point in sorted(_rows(), key=lambda row: distance(row[1]))][:NEAREST]


@pytest.fixture
def vector_database() -> Iterator[Database]:
    database = open_database(pgvector_dsn())
    yield database
    database.close()


@pytest.fixture
def vector_table(vector_database: Database) -> Iterator[str]:
    """A table of 2-dimensional vectors no earlier run used (the database outlives a run)."""
    name = f"vectors_{uuid.uuid4().hex[:12]}"

    def make(cursor: Cursor) -> None:
        cursor.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, embedding vector(2))")
        cursor.executemany(
            f"INSERT INTO {name} VALUES (?, ?::vector)",
            [(angle, _literal(point)) for angle, point in _rows()],
        )

    vector_database.run("make a table of vectors", make)
    yield name
    vector_database.run("drop the table of vectors", lambda c: c.execute(f"DROP TABLE {name}"))


def test_the_test_user_can_enable_the_vector_extension(vector_database: Database) -> None:
    def enable(cursor: Cursor) -> tuple[str, float]:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        row = cursor.execute(
            "SELECT extversion, '[3,4]'::vector <=> '[6,8]'::vector "
            "FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        return row[0], row[1]

    version, same_direction = vector_database.run("enable pgvector", enable)
    # hnsw indexes came in pgvector 0.5.
    assert tuple(int(part) for part in version.split(".")[:2]) >= (0, 5)
    assert same_direction == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize(
    ("index", "search_everything"),
    [
        # ef_search above the row count: the search visits every row of the graph.
        ("hnsw (embedding vector_cosine_ops)", "SET LOCAL hnsw.ef_search = 100"),
        # As many probes as lists: the search scans every list.
        (
            "ivfflat (embedding vector_cosine_ops) WITH (lists = 4)",
            "SET LOCAL ivfflat.probes = 4",
        ),
    ],
)
def test_an_index_answers_a_cosine_search_with_the_nearest_rows(
    vector_database: Database, vector_table: str, index: str, search_everything: str
) -> None:
    query = _point(QUERY_ANGLE, 1.0)
    search = f"SELECT id FROM {vector_table} ORDER BY embedding <=> ?::vector LIMIT {NEAREST}"

    def index_and_search(cursor: Cursor) -> tuple[str, list[int]]:
        cursor.execute(f"CREATE INDEX {vector_table}_embedding ON {vector_table} USING {index}")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(search_everything)
        plan = cursor.execute(f"EXPLAIN {search}", (_literal(query),)).fetchall()
        found = cursor.execute(search, (_literal(query),)).fetchall()
        return "\n".join(row[0] for row in plan), [row[0] for row in found]

    plan, found = vector_database.run("search by cosine distance", index_and_search)
    assert f"Index Scan using {vector_table}_embedding" in plan
    assert found == _nearest_by_cosine(query) == [102, 96, 108, 90]
