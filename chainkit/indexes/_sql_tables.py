"""The tables of a SQLIndex, in each dialect, and a metadata filter as SQL.

Table `T` (the name given) holds a row per document: its id, its source (metadata's
`source`), text, metadata as JSON (jsonb on PostgreSQL), its terms for BM25 and its unit
vector (float32 blob on SQLite; pgvector's `vector`, typed `vector(n)` with an HNSW cosine
index once the first vector sets `n`, on PostgreSQL), or none. `T_sources` records each
source's content hash; `T_state` one row: the revision, bumped by every write, which tells a
process that its in-memory copies are stale, and the vectors' dimensions."""

# ruff: noqa: S608 - the statements name the index's tables, whose name `checked_table`
# allows only letters, digits and underscores; every value is a "?" parameter.

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from chainkit._store.database import SCHEMA_TABLE
from chainkit.indexes.base import Filter
from chainkit.indexes.errors import IndexConfigError

__all__ = ["IDS_PER_READ", "Statements", "checked_table", "pushed_filter"]

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,40}")
_INT64 = 2**63
_MOST_PUSHED = 200
"""Values of one key compared in SQL at most: a longer list is left to `matches` (SQLite
takes a bounded number of parameters)."""
IDS_PER_READ = 50
"""Ids read in one SELECT: a search's hits, or more at once."""


def checked_table(table: object) -> str:
    if not isinstance(table, str) or _NAME.fullmatch(table) is None:
        raise IndexConfigError(
            "table must be a name of lower-case letters, digits and underscores (up to 41, "
            f"not starting with a digit), got {table!r}"
        )
    if table == SCHEMA_TABLE:
        raise IndexConfigError(
            f"table {table!r} holds the database's schema versions: name another"
        )
    return table


class Statements:
    """The SQL of one index's tables (named after `table`) in one dialect."""

    def __init__(self, dialect: str, table: str) -> None:
        self.dialect = dialect
        self.table = table
        postgres = dialect == "postgresql"
        t = table
        self.create = [
            *(["CREATE EXTENSION IF NOT EXISTS vector"] if postgres else []),
            f"CREATE TABLE IF NOT EXISTS {t} ("
            + ("seq BIGSERIAL, " if postgres else "")
            + "id TEXT PRIMARY KEY, source TEXT, text TEXT NOT NULL, "
            + f"metadata {'JSONB' if postgres else 'TEXT'} NOT NULL, terms TEXT NOT NULL, "
            + f"vector {'vector' if postgres else 'BLOB'})",
            f"CREATE INDEX IF NOT EXISTS {t}_by_source ON {t} (source)",
            f"CREATE INDEX IF NOT EXISTS {t}_without_vectors ON {t} (id) WHERE vector IS NULL",
            f"CREATE TABLE IF NOT EXISTS {t}_sources "
            "(source TEXT PRIMARY KEY, content_hash TEXT NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS {t}_state (one INTEGER PRIMARY KEY CHECK (one = 1), "
            "revision BIGINT NOT NULL, dimensions INTEGER)",
            f"INSERT INTO {t}_state VALUES (1, 0, NULL) ON CONFLICT (one) DO NOTHING",
        ]
        if postgres:
            self.create.append(
                f"CREATE INDEX IF NOT EXISTS {t}_by_metadata ON {t} "
                "USING gin (metadata jsonb_path_ops)"
            )
        vector = "CAST(? AS vector)" if postgres else "?"
        metadata = "CAST(? AS jsonb)" if postgres else "?"
        order = "seq" if postgres else "rowid"
        self.order = order
        self.upsert = (
            f"INSERT INTO {t} (id, source, text, metadata, terms, vector) "
            f"VALUES (?, ?, ?, {metadata}, ?, {vector}) ON CONFLICT (id) DO UPDATE SET "
            "source = excluded.source, text = excluded.text, metadata = excluded.metadata, "
            "terms = excluded.terms, vector = excluded.vector"
        )
        self.delete = f"DELETE FROM {t} WHERE id = ? RETURNING id"
        self.delete_source = f"DELETE FROM {t} WHERE source = ? RETURNING id"
        self.count = f"SELECT COUNT(*) FROM {t}"
        self.state = f"SELECT revision, dimensions FROM {t}_state" + (
            " FOR UPDATE" if postgres else ""
        )
        self.revision = f"SELECT revision, dimensions FROM {t}_state"
        self.without_vectors = f"SELECT COUNT(*) FROM {t} WHERE vector IS NULL"
        self.bump = f"UPDATE {t}_state SET revision = revision + 1 RETURNING revision"
        self.set_dimensions = f"UPDATE {t}_state SET dimensions = ?"
        self.typed_vectors = (
            [
                f"ALTER TABLE {t} ALTER COLUMN vector TYPE vector({{n}})",
                f"CREATE INDEX IF NOT EXISTS {t}_by_vector ON {t} "
                "USING hnsw (vector vector_cosine_ops)",
            ]
            if postgres
            else []
        )
        self.documents = (
            f"SELECT id, text, metadata FROM {t} WHERE id IN ({', '.join(['?'] * IDS_PER_READ)})"
        )
        """The rows of `IDS_PER_READ` ids (fewer padded with a repeated one): one statement
        for every read, parsed once."""
        self.all_terms = f"SELECT id, terms FROM {t} ORDER BY {order}"
        self.all_vectors = f"SELECT id, vector FROM {t} WHERE vector IS NOT NULL ORDER BY {order}"
        self.metadata_of_all = f"SELECT id, metadata FROM {t}"

        self.source_hashes = f"SELECT source, content_hash FROM {t}_sources"
        self.record_source = (
            f"INSERT INTO {t}_sources (source, content_hash) VALUES (?, ?) "
            "ON CONFLICT (source) DO UPDATE SET content_hash = excluded.content_hash"
        )
        self.forget_source = f"DELETE FROM {t}_sources WHERE source = ?"

    def nearest(self, condition: str) -> str:
        """pgvector's nearest rows (seq, id, text, metadata, vector, cosine distance) meeting
        `condition`, given the query vector twice, the condition's parameters between, and
        the limit."""
        t = self.table
        return (
            f"SELECT seq, id, text, metadata, vector::text, vector <=> CAST(? AS vector) AS d "
            f"FROM {t} WHERE vector IS NOT NULL {'AND ' + condition if condition else ''} "
            "ORDER BY vector <=> CAST(? AS vector) LIMIT ?"
        )


def pushed_filter(dialect: str, where: Filter) -> tuple[str, list[Any]]:
    """A SQL condition (and its parameters) that every row whose metadata matches `where`
    meets, and few others: a superset, so the rows it finds are still checked by
    `_selection.matches`. Keys whose wanted values SQL cannot compare exactly (None, a
    mapping, a float) are left to that check; "" and no parameters when no key is."""
    conditions: list[str] = []
    parameters: list[Any] = []
    for key, wanted in where.items():
        encodings = _json_encodings(wanted)
        if encodings is None or len(encodings) > _MOST_PUSHED or '"' in key or "\\" in key:
            continue
        listed = isinstance(wanted, list | tuple | set | frozenset)
        if dialect == "postgresql":
            contains = " OR ".join(["metadata @> CAST(? AS jsonb)"] * len(encodings))
            parameters += [f"{{{json.dumps(key)}:{encoding}}}" for encoding in encodings]
            if listed:  # a list of values matches a list equal to it
                contains += " OR jsonb_typeof(metadata -> ?) = 'array'"
                parameters.append(key)
        else:
            path = f'$."{key}"'
            marks = ", ".join(["?"] * len(encodings))
            contains = f"json_extract(metadata, ?) IN ({marks})"
            parameters += [path, *(json.loads(encoding) for encoding in encodings)]
            if listed:
                contains += " OR json_type(metadata, ?) = 'array'"
                parameters.append(path)
        conditions.append(f"({contains})")
    return " AND ".join(conditions), parameters


def _json_encodings(wanted: object) -> list[str] | None:
    """The JSON values a metadata value equal to `wanted` (or, for a list, to one of its
    items) may be stored as: True as true or 1, 1 as 1 or true; None when SQL cannot tell."""
    if isinstance(wanted, list | tuple | set | frozenset):
        found: list[str] = []
        for item in wanted:
            encodings = _json_encodings(item) if not isinstance(item, Mapping) else None
            if encodings is None or isinstance(item, list | tuple | set | frozenset):
                return None
            found += encodings
        return list(dict.fromkeys(found)) or None
    if isinstance(wanted, str):
        return [json.dumps(wanted, ensure_ascii=False)] if _encodable(wanted) else None
    if isinstance(wanted, bool) or (isinstance(wanted, int) and wanted in (0, 1)):
        return ["true", "1"] if wanted else ["false", "0"]
    if isinstance(wanted, int) and -_INT64 < wanted < _INT64:
        return [str(wanted)]
    if isinstance(wanted, float) and math.isfinite(wanted) and wanted.is_integer():
        return _json_encodings(int(wanted))
    return None


def _encodable(text: str) -> bool:
    """Whether `text` can be sent to a database: no lone surrogate, no NUL."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return "\x00" not in text
