"""`chainkit search "…" --db WHERE`: the chunks of an index (`chainkit index`, or any
`indexes.SQLIndex`) that best match a query, with their scores and sources; by their terms
(BM25) with no model, or by meaning with the embedder the index was made with."""

from __future__ import annotations

import argparse
import json
import re
from typing import TYPE_CHECKING, Any

from chainkit._cli import arguments, exit_status, index, stderr
from chainkit._cli.databases import check_existing
from chainkit._text import visible, visible_json

if TYPE_CHECKING:
    from chainkit.indexes import Hit, SQLIndex

COMMAND = "search"

_SHOWN = 300
"""The characters of a chunk shown under its source (all of them with --json)."""

_SPACE = re.compile(r"\s+")


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `search` to the `chainkit` command's subcommands."""
    command = commands.add_parser(
        COMMAND,
        help="the chunks of an index that best match a query, with scores and sources",
        description=(
            "Searches the index chainkit index made in WHERE (a SQLite file or a postgresql:// "
            "URL) and shows the best chunks, best first: their score, source and text. By "
            "their terms (BM25, offline) unless --embeddings-url names the server that "
            "embedded the index (or --local-embedder, the local model that did): then by "
            "terms and meaning fused, or as --by says."
        ),
    )
    command.add_argument("query", metavar="QUERY", help="what to look for, in quotes")
    index.add_database_option(command)
    command.add_argument(
        "-k",
        type=arguments.positive,
        default=4,
        metavar="N",
        help="how many chunks to show (default: 4)",
    )
    command.add_argument(
        "--where",
        action="append",
        type=_condition,
        default=[],
        metavar="KEY=VALUE",
        help=(
            "only chunks whose metadata KEY is VALUE (read as JSON when it is: page=3); "
            "repeated for one key, any of its values; for several keys, all of them"
        ),
    )
    command.add_argument(
        "--json", action="store_true", help="one JSON object a line, with the whole text"
    )
    command.add_argument(
        "--by",
        choices=("terms", "meaning", "both"),
        help=(
            "rank by terms (BM25; the default with no embedder), by meaning (cosine), or both "
            "fused by reciprocal rank (the default with an embedder)"
        ),
    )
    index.add_embedder_options(command)


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Runs `chainkit search`; its exit status."""
    from chainkit._errors import ChainkitError

    index.check_embedder_options(args, parser)
    if not args.query.strip():
        parser.error("QUERY is empty: give the words to look for")
    embedded = args.embeddings_url is not None or args.local_embedder
    by = args.by or ("both" if embedded else "terms")
    if by != "terms" and not embedded:
        parser.error(f"--by {by} needs the index's embedder: --embeddings-url or --local-embedder")
    try:
        check_existing(args.db, index.INDEX_TABLE, "an index", "chainkit index")
        found, database = index.open_index(args, parser)
    except ChainkitError as refused:  # the database, or the embedder's extra missing
        stderr.error(COMMAND, str(refused))
        return exit_status.FAILED
    where = _filter(args.where)
    try:
        hits = _ranked(found, by, args.query, args.k, where)
    except ChainkitError as failed:  # the database, or the embeddings server
        stderr.error(COMMAND, str(failed))
        return exit_status.FAILED
    finally:
        found.close()
        database.close()
    if not hits:
        stderr.tell(COMMAND, "no chunk matches")
    for rank, hit in enumerate(hits, 1):
        print(_json(hit) if args.json else _shown(rank, hit))
    return exit_status.SUCCESS


def _ranked(
    found: SQLIndex, by: str, query: str, k: int, where: dict[str, Any] | None
) -> list[Hit]:
    if by == "terms":
        return found.keyword_search(query, k=k, where=where)
    if by == "meaning":
        return found.search(query, k=k, where=where)
    from chainkit.retrievers import Hybrid

    return Hybrid.from_index(found, k=k, fetch_k=max(20, k), where=where).search(query)


def _condition(text: str) -> tuple[str, Any]:
    """KEY=VALUE, the value read as JSON when it is (a number, true), else as a string."""
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE, as in format=markdown")
    try:
        read = json.loads(value)
    except ValueError:
        return key, value
    return key, read if isinstance(read, str | int | float | bool) else value


def _filter(conditions: list[tuple[str, Any]]) -> dict[str, Any] | None:
    values: dict[str, list[Any]] = {}
    for key, value in conditions:
        values.setdefault(key, []).append(value)
    return {key: each[0] if len(each) == 1 else each for key, each in values.items()} or None


def _shown(rank: int, hit: Hit) -> str:
    metadata = hit.document.metadata
    where = str(metadata.get("source", hit.document.id))
    if "page" in metadata:
        where += f", page {metadata['page']}"
    if "start" in metadata:
        where += f", at {metadata['start']}"
    text = _SPACE.sub(" ", hit.document.text).strip()
    if len(text) > _SHOWN:
        text = text[: _SHOWN - 1] + "…"
    return f"{rank}. {hit.score:.3f}  {visible(where)}\n   {visible(text)}"


def _json(hit: Hit) -> str:
    document = hit.document
    line = {
        "id": document.id,
        "score": hit.score,
        "source": document.metadata.get("source"),
        "text": document.text,
        "metadata": dict(document.metadata),
    }
    return visible_json(json.dumps(line, ensure_ascii=False, default=str))
