"""A public attribute never holds a private type: what a user can read off a chainkit object
is of a type they can import (and name in their own annotations)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap
import types
from collections.abc import Iterator

import chainkit
from tests.support.extras import missing_extra

# Where a class may be defined for a user to meet it: any module without a private part.
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")


def _is_private(module_name: str) -> bool:
    return any(part.startswith("_") for part in module_name.split("."))


def _modules() -> list[types.ModuleType]:
    loaded = [chainkit]
    for info in pkgutil.walk_packages(chainkit.__path__, "chainkit."):
        try:
            loaded.append(importlib.import_module(info.name))
        except ModuleNotFoundError as error:
            assert missing_extra(error), error
    return loaded


def _exported_classes(modules: list[types.ModuleType]) -> dict[type, str]:
    exported: dict[type, str] = {}
    for module in modules:
        if _is_private(module.__name__):
            continue
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if inspect.isclass(value):
                exported.setdefault(value, f"{module.__name__}.{name}")
    return exported


def _attribute_annotations(cls: type) -> Iterator[tuple[str, str]]:
    """(attribute, annotation text) for each public attribute `cls` declares: its annotated
    fields, its properties, and what its `__init__` keeps from an annotated parameter."""
    for owner in cls.__mro__:
        if not owner.__module__.startswith("chainkit"):
            continue
        for name, annotation in vars(owner).get("__annotations__", {}).items():
            if not name.startswith("_"):
                yield name, str(annotation)
        for name, member in vars(owner).items():
            if isinstance(member, property) and not name.startswith("_") and member.fget:
                returned = member.fget.__annotations__.get("return")
                if returned is not None:
                    yield name, str(returned)
    init = vars(cls).get("__init__")
    if inspect.isfunction(init):
        yield from _kept_parameters(init)


def _kept_parameters(init: types.FunctionType) -> Iterator[tuple[str, str]]:
    try:
        source = inspect.getsource(init)
    except OSError:  # a dataclass's __init__, whose fields are annotated on the class
        return
    tree = ast.parse(textwrap.dedent(source))
    parameters = init.__annotations__
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and not target.attr.startswith("_")
            ):
                for used in ast.walk(node.value):
                    if isinstance(used, ast.Name) and used.id in parameters:
                        yield target.attr, str(parameters[used.id])


def _classes_by_name(modules: list[types.ModuleType]) -> dict[str, list[type]]:
    found: dict[str, list[type]] = {}
    for module in modules:
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == module.__name__:
                found.setdefault(name, []).append(value)
    return found


def private_attribute_types(modules: list[types.ModuleType]) -> list[str]:
    exported = _exported_classes(modules)
    by_name = _classes_by_name(modules)
    problems = []
    for cls, where in exported.items():
        for attribute, annotation in _attribute_annotations(cls):
            for name in set(_IDENTIFIER.findall(annotation)):
                hidden = any(
                    _is_private(candidate.__module__) and candidate not in exported
                    for candidate in by_name.get(name, ())
                )
                if name.startswith("_") or hidden:
                    problems.append(f"{where}.{attribute}: {annotation}")
    return sorted(set(problems))


def test_no_public_attribute_of_an_exported_class_holds_a_private_type():
    assert private_attribute_types(_modules()) == []


class Hidden:
    """Stands for a class of a private module."""


class ExportedError(Exception):
    """Stands for an exported error keeping a parameter of a private type, as
    InvalidArgumentsError kept its `problems` of tools._jsonschema.Problem."""

    def __init__(self, problems: list[Hidden], count: int) -> None:
        super().__init__("bad")
        self.problems = tuple(problems)
        self.count = count


def test_the_check_finds_an_attribute_of_a_private_type(monkeypatch):
    private = types.ModuleType("chainkit._hidden")
    private.Hidden = Hidden  # type: ignore[attr-defined]
    monkeypatch.setattr(Hidden, "__module__", private.__name__)
    public = types.ModuleType("chainkit.exported")
    public.ExportedError = ExportedError  # type: ignore[attr-defined]
    public.__all__ = ["ExportedError"]  # type: ignore[attr-defined]
    assert private_attribute_types([private, public]) == [
        "chainkit.exported.ExportedError.problems: list[Hidden]"
    ]
