"""Arrows point one way: no package imports anything above it (ARCHITECTURE.md)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

# What each package may import from chainkit, besides itself and private top-level helpers.
ALLOWED = {
    "schema": set(),
    "callbacks": {"schema"},
    "memory": {"schema"},
    "tools": {"schema"},
    "prompts": {"schema"},
    "llms": {"schema", "callbacks"},
    "chains": {"schema", "prompts", "llms", "callbacks"},
}


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_nothing_above_it(package):
    code = (
        f"import sys, chainkit.{package}\n"
        "print(' '.join(sorted({m.split('.')[1] for m in sys.modules "
        "if m.startswith('chainkit.') and not m.split('.')[1].startswith('_')})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.split()) - {package}
    assert loaded <= ALLOWED[package], f"chainkit.{package} imports {loaded - ALLOWED[package]}"


CHAINKIT = Path(__file__).resolve().parent.parent / "chainkit"


def imports_of(path: Path) -> set[str]:
    """The modules `path` imports (`from a.b import c` gives a.b and a.b.c)."""
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module)  # and each name, which may be a module
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    return imported


def modules_outside_the_cli() -> list[Path]:
    return [
        path for path in CHAINKIT.rglob("*.py") if path.relative_to(CHAINKIT).parts[0] != "_cli"
    ]


def test_only_the_cli_parses_a_command_line():
    parsing = [
        str(path.relative_to(CHAINKIT))
        for path in modules_outside_the_cli()
        if "argparse" in imports_of(path)
    ]
    assert parsing == []


def test_only_python_m_chainkit_imports_the_cli():
    # The CLI imports the engines (batch, MCP, traces), never the other way round.
    importing = [
        str(path.relative_to(CHAINKIT))
        for path in modules_outside_the_cli()
        if path.name != "__main__.py"
        and any(name.split(".")[:2] == ["chainkit", "_cli"] for name in imports_of(path))
    ]
    assert importing == []
