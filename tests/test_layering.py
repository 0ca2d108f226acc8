"""The import contract of ARCHITECTURE.md: arrows point down the layers, nothing reaches into
another package's private modules or names, and no module takes part in an import cycle.

Imports are read from the source (module level, inside functions and under TYPE_CHECKING alike),
so a lazy import cannot hide an arrow; one subprocess per package also checks what importing it
loads at run time."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "chainkit"

BASE = {
    "schema",
    "_errors",
    "_text",
    "_redact",
    "_lazy",
    "_threads",
    "_stop",
    "_elsewhere",
    "_factory",
    "_progress",
    "_search",
    "_mrkl",
    "_jsonschema",
    "_pipe",
    "_store",
    "_tokens",
    "_plain",
}
PARTS = {
    "callbacks",
    "memory",
    "prompts",
    "tools",
    "checkpoints",
    "parsers",
    "documents",
    "indexes",
}
# What each unit (a package, or a module at the root) may import from chainkit besides itself.
ALLOWED: dict[str, set[str]] = {
    "schema": {"_errors"},
    "_errors": set(),
    "_text": set(),
    "_redact": set(),
    "_lazy": set(),
    "_threads": set(),
    "_elsewhere": set(),
    "_stop": {"_errors", "_threads"},
    "_factory": {"_errors"},
    "_progress": {"_text"},
    "_search": {"_errors"},
    "_mrkl": {"schema"},
    "_jsonschema": {"_errors", "_text"},
    "_pipe": set(),
    "_store": {"_errors", "_redact"},
    "_tokens": {"schema"},
    "_plain": {"_redact", "_text"},
    **{part: BASE for part in PARTS},
    "indexes": BASE | {"documents"},
    "llms": BASE | {"callbacks"},
    "retrievers": BASE | {"callbacks", "tools", "documents", "indexes"},
    "chains": BASE
    | {"callbacks", "prompts", "tools", "parsers", "memory", "llms"}
    | {"documents", "indexes", "retrievers"},
    "agents": BASE | PARTS | {"llms", "retrievers", "chains"},
    "_batch": BASE | PARTS | {"llms", "retrievers", "chains", "agents"},
    "distributed": BASE | PARTS | {"llms", "retrievers", "chains", "agents", "_batch"},
    "serving": BASE | PARTS | {"llms", "retrievers", "chains", "agents"},
    "_cli": BASE
    | PARTS
    | {"llms", "retrievers", "chains", "agents", "_batch", "distributed", "serving"},
    "__main__": {"_cli"},
}
# The root package holds the exports only: it may import any unit.
ROOT = ""


@dataclass(frozen=True)
class Import:
    importer: str  # the importing module, dotted
    module: str  # the chainkit module imported (or imported from)
    names: tuple[str, ...]  # the names taken from it; () for `import x` or a submodule
    line: int

    def __str__(self) -> str:
        taken = f" ({', '.join(self.names)})" if self.names else ""
        return f"{self.importer}:{self.line} imports {self.module}{taken}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


@cache
def syntax(module: str) -> ast.Module:
    return ast.parse(modules()[module].read_text(encoding="utf-8"))


def _absolute(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = modules()[importer].name == "__init__.py"
    base = importer if is_package else importer.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{node.module}" if node.module else base


def _imports_of(importer: str) -> list[Import]:
    found = []
    for node in ast.walk(syntax(importer)):
        if isinstance(node, ast.Import):
            found += [Import(importer, alias.name, (), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(importer, node)
            names = [alias.name for alias in node.names]
            submodules = [name for name in names if f"{source}.{name}" in modules()]
            found += [Import(importer, f"{source}.{name}", (), node.lineno) for name in submodules]
            rest = tuple(name for name in names if name not in submodules)
            if rest:
                found.append(Import(importer, source, rest, node.lineno))
    return [found_import for found_import in found if found_import.module.startswith("chainkit")]


@cache
def all_imports() -> tuple[Import, ...]:
    return tuple(item for importer in modules() for item in _imports_of(importer))


def unit(module: str) -> str:
    """`chainkit.llms.openai.client` -> `llms`; the root package is ROOT."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def existing(module: str) -> str:
    """The module a dotted import lands in (a name imported from a module is not a module)."""
    while module not in modules():
        module = module.rpartition(".")[0]
    return module


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_owner(item: Import) -> str | None:
    """The package whose private part `item` reaches into, or None when it takes nothing private.

    A `_`-prefixed unit at the root is the framework's internal API, open to every unit; a
    `_`-prefixed module or name deeper down belongs to the package (or root unit) holding it."""
    parts = item.module.split(".")
    for depth in range(2, len(parts)):
        if is_private(parts[depth]):
            return ".".join(parts[:depth])
    if any(is_private(name) for name in item.names):
        holder = existing(item.module)
        if modules()[holder].name != "__init__.py":
            holder = holder.rpartition(".")[0]
        return holder if holder != "chainkit" else item.module
    return None


def inside(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def test_every_unit_is_placed_in_the_table():
    units = {unit(module) for module in modules()} - {ROOT}
    assert units == set(ALLOWED), "place new packages in ALLOWED and ARCHITECTURE.md"


def test_the_layer_table_has_no_cycle():
    assert not _cycles({name: allowed - {name} for name, allowed in ALLOWED.items()})


def test_no_unit_imports_one_it_may_not():
    wrong = [
        str(item)
        for item in all_imports()
        if unit(item.importer) != ROOT
        and unit(item.module) not in {unit(item.importer), ROOT} | ALLOWED[unit(item.importer)]
    ]
    assert not wrong, "\n".join(wrong)


def test_only_the_root_package_imports_the_root_package():
    # `from chainkit import __version__` is the one root attribute the layers may read.
    wrong = [
        str(item)
        for item in all_imports()
        if unit(item.module) == ROOT
        and unit(item.importer) != ROOT
        and set(item.names) - {"__version__"}
    ]
    assert not wrong, "\n".join(wrong)


def test_nothing_reaches_into_another_packages_private_parts():
    wrong = []
    for item in all_imports():
        owner = private_owner(item)
        if owner is not None and not inside(item.importer, owner):
            wrong.append(f"{item}: private to {owner}")
    assert not wrong, "\n".join(wrong)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iteratively)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in order:
            continue
        work = [(start, iter(sorted(graph[start])))]
        order[start] = low[start] = len(order)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in order:
                    order[target] = low[target] = len(order)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], order[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == order[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_takes_part_in_an_import_cycle():
    graph: dict[str, set[str]] = {module: set() for module in modules()}
    for item in all_imports():
        target = existing(item.module)
        # A submodule importing its own package's exports is how packages are built, not a cycle.
        if target != item.importer and not inside(item.importer, target):
            graph[item.importer].add(target)
    assert not _cycles(graph)


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_private_parts_belong_to_the_package_that_holds_them():
    def owner(importer: str, module: str, *names: str) -> str | None:
        return private_owner(Import(importer, module, names, 1))

    assert owner("chainkit.agents.x", "chainkit._threads", "in_thread") is None
    assert owner("chainkit.agents.x", "chainkit.llms._tokens") == "chainkit.llms"
    assert owner("chainkit.agents.x", "chainkit.tools.structured", "_render") == "chainkit.tools"
    assert owner("chainkit.agents.x", "chainkit._batch._lines") == "chainkit._batch"


CI = bool(os.environ.get("CI"))
RUNTIME = sorted(unit for unit in ALLOWED if not is_private(unit) and unit != "__main__")


@pytest.mark.parametrize("package", RUNTIME)
def test_importing_a_package_loads_nothing_above_it(package):
    # Ray is an extra, not in `.[dev]`; CI installs it, and there a missing Ray fails this.
    if package == "distributed" and importlib.util.find_spec("ray") is None and not CI:
        pytest.skip('chainkit.distributed needs Ray (pip install -e ".[ray]")')
    code = (
        f"import sys, chainkit.{package}\n"
        "print(' '.join(sorted({m.split('.')[1] for m in sys.modules "
        "if m.startswith('chainkit.')})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.split()) - {package}
    assert loaded <= ALLOWED[package], f"chainkit.{package} loads {loaded - ALLOWED[package]}"


def test_only_the_cli_parses_a_command_line():
    parsing = [
        module
        for module in modules()
        if unit(module) != "_cli"
        and any(
            (isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names))
            or (isinstance(node, ast.ImportFrom) and node.module == "argparse")
            for node in ast.walk(syntax(module))
        )
    ]
    assert parsing == []
