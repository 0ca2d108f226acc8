"""Arrows point one way: no package imports anything above it (ARCHITECTURE.md)."""

import subprocess
import sys

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
