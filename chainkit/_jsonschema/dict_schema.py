"""A JSON Schema given as a dict, checked as it stands: the subset chainkit writes (and
pydantic's `model_json_schema` adds: `$ref` to `#/$defs/...`, `const`, `oneOf`, `allOf`).

Keywords checked: type (one name or a list), enum, const, properties, required,
additionalProperties (true, false or a schema), items, anyOf, oneOf (as anyOf: one match is
enough), allOf and local `$ref`. Every other keyword (title, description, default, format,
bounds) is an annotation here: not checked. Values are taken as they are, never coerced.

A schema no value could be checked against is refused when it is given, before any request
carries it: one that is no JSON (a set, NaN, a key that is no string), nested deeper than
`MAX_NESTING`, with a `type` no JSON value has, or with a `$ref` that is remote, points at
nothing, or leads back to itself without reading any part of the value.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, Final

from chainkit._jsonschema.specs import (
    INVALID,
    ArgumentProblem,
    Spec,
    UnsupportedTypeError,
    expected_one_of,
    index_path,
    json_type_of,
    key_path,
)

_MAX_REF_DEPTH: Final = 64
_Memo = dict[tuple[int, int, str], list[ArgumentProblem]]
"""The problems found for each (schema node, value, path) in one `coerce` (ids: both live
throughout it)."""
MAX_NESTING: Final = 256
"""The most objects and arrays a schema nests in one another: far beyond any written one, and
short of the depth that would exhaust Python's stack while the request is written."""
_TYPE_NAMES: Final = frozenset(
    ("string", "integer", "number", "boolean", "null", "array", "object")
)


def _fits_type(value: object, name: str) -> bool:
    own = "null" if value is None else json_type_of(value)
    return own == name or (name == "number" and own == "integer")


class DictSchemaSpec(Spec):
    """A JSON Schema dict: `schema()` gives it back as given, `coerce` checks a value against
    it and returns the value unchanged (or INVALID, with every problem found)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        if not isinstance(schema, Mapping):
            raise UnsupportedTypeError(f"a JSON Schema must be a dict, got {schema!r}")
        self._root = dict(schema)
        _check_schema(self._root)

    def _schema(self) -> dict[str, Any]:
        return dict(self._root)

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        before = len(problems)
        self._check(self._root, value, path, problems, 0, {})
        return INVALID if len(problems) > before else value

    def _resolve(self, schema: Mapping[str, Any], depth: int) -> Mapping[str, Any]:
        ref = schema.get("$ref")
        while isinstance(ref, str):
            if depth > _MAX_REF_DEPTH or not _is_local(ref):
                raise UnsupportedTypeError(f"cannot follow $ref {ref!r}: only local ones are read")
            target = _pointed_at(self._root, ref)
            if not isinstance(target, Mapping):
                raise UnsupportedTypeError(f"$ref {ref!r} points at nothing")
            schema, ref, depth = target, target.get("$ref"), depth + 1
        return schema

    def _check(
        self,
        schema: object,
        value: object,
        path: str,
        problems: list[ArgumentProblem],
        depth: int,
        memo: _Memo,
    ) -> None:
        """Appends what is wrong with `value` under `schema`. Each (schema, value) pair is
        checked once per `coerce`: a recursive anyOf tries every branch on the same values,
        which without `memo` costs time exponential in the nesting. `depth` counts the steps
        taken on this one value (anyOf, allOf, $ref): a cycle of them never ends."""
        if schema is True or not isinstance(schema, Mapping):
            return
        key = (id(schema), id(value), path)
        found = memo.get(key)
        if found is None:
            found = []
            schema = self._resolve(schema, depth)
            if self._check_shape(schema, value, path, found):
                for part in schema.get("allOf") or ():
                    self._check(part, value, path, found, depth + 1, memo)
                options = schema.get("anyOf") or schema.get("oneOf")
                if options:
                    self._check_any(options, value, path, found, depth + 1, memo)
                self._check_members(schema, value, path, found, memo)
            memo[key] = found
        problems.extend(found)

    def _check_shape(
        self, schema: Mapping[str, Any], value: object, path: str, problems: list[ArgumentProblem]
    ) -> bool:
        """Checks type, enum and const; False (with the problem) when the value fails them."""
        kinds = schema.get("type")
        names = kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []
        if names and not any(_fits_type(value, name) for name in names):
            return self._rejected(value, path, problems, " or ".join(names))
        if "enum" in schema and not any(_same(value, c) for c in schema["enum"]):
            return self._rejected(value, path, problems, expected_one_of(schema["enum"]))
        if "const" in schema and not _same(value, schema["const"]):
            return self._rejected(value, path, problems, expected_one_of([schema["const"]]))
        return True

    def _rejected(
        self, value: object, path: str, problems: list[ArgumentProblem], expected: str
    ) -> bool:
        self._reject(value, path, problems, expected)
        return False

    def _check_any(
        self,
        options: list[Any],
        value: object,
        path: str,
        problems: list[ArgumentProblem],
        depth: int,
        memo: _Memo,
    ) -> None:
        closest: list[ArgumentProblem] | None = None
        for option in options:
            attempt: list[ArgumentProblem] = []
            self._check(option, value, path, attempt, depth, memo)
            if not attempt:
                return
            if closest is None or len(attempt) < len(closest):
                closest = attempt
        problems.extend(closest or ())

    def _check_members(
        self,
        schema: Mapping[str, Any],
        value: object,
        path: str,
        problems: list[ArgumentProblem],
        memo: _Memo,
    ) -> None:
        """Checks an object's properties or an array's items: each a new value, so its
        `depth` starts again."""
        if isinstance(value, list) and "items" in schema:
            items = schema["items"]
            for index, item in enumerate(value):
                self._check(items, item, index_path(path, index), problems, 0, memo)
        if not isinstance(value, dict):
            return
        properties: Mapping[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            where = key_path(path, str(key))
            if key in properties:
                self._check(properties[key], item, where, problems, 0, memo)
            elif extra is False:
                known = ", ".join(properties) or "none"
                problems.append(ArgumentProblem(where, f"unknown field (known: {known})"))
            else:
                self._check(extra, item, where, problems, 0, memo)
        problems.extend(
            ArgumentProblem(key_path(path, name), "missing required field")
            for name in schema.get("required") or ()
            if name not in value
        )


def _same(value: object, choice: object) -> bool:
    """JSON equality: True is not 1, 1 is 1.0."""
    if isinstance(value, bool) or isinstance(choice, bool):
        return type(value) is type(choice) and value == choice
    return value == choice


def _is_local(ref: str) -> bool:
    return ref == "#" or ref.startswith("#/")


def _pointed_at(root: Mapping[str, Any], ref: str) -> object:
    """What the local `$ref` `ref` (a JSON Pointer after "#") points at in `root`; None when
    nothing."""
    target: object = root
    for part in ref[2:].split("/") if ref != "#" else ():
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, Mapping):
            target = target.get(part)
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return None
    return target


def _check_schema(root: dict[str, Any]) -> None:
    """UnsupportedTypeError, naming what is wrong, for a schema no value could be checked
    against (see the module's doc)."""
    schemas = []
    for where, node in _json_nodes(root):
        if isinstance(node, Mapping):
            _check_keywords(root, where, node)
            schemas.append(node)
    _check_ref_cycles(root, schemas)


def _json_nodes(root: dict[str, Any]) -> Iterator[tuple[str, object]]:
    """Every value in `root`, with where it is ("properties/price/type"); UnsupportedTypeError
    for one that is no JSON, or nested deeper than MAX_NESTING. Without recursion, so any depth
    is met with this error rather than Python's."""
    stack: list[tuple[str, object, int]] = [("", root, 0)]
    while stack:
        where, node, depth = stack.pop()
        if depth > MAX_NESTING:
            raise UnsupportedTypeError(
                f"the JSON Schema nests more than {MAX_NESTING} levels deep (at {where[:80]}...)"
            )
        if isinstance(node, Mapping):
            for key, child in node.items():
                if not isinstance(key, str):
                    raise UnsupportedTypeError(
                        f"the JSON Schema has a key {key!r} at /{where}: JSON keys are strings"
                    )
                stack.append((f"{where}/{key}" if where else key, child, depth + 1))
        elif isinstance(node, list):
            stack.extend((f"{where}/{i}", child, depth + 1) for i, child in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            raise UnsupportedTypeError(
                f"the JSON Schema holds {node!r} at /{where}, which is no JSON number"
            )
        elif node is not None and not isinstance(node, str | int | float):
            raise UnsupportedTypeError(
                f"the JSON Schema holds a {type(node).__name__} at /{where}, which JSON has not"
            )
        yield where, node


def _check_keywords(root: Mapping[str, Any], where: str, schema: Mapping[str, Any]) -> None:
    """UnsupportedTypeError for a `type` no JSON value has (a typo would refuse every value)
    and a `$ref` that cannot be followed. `where` may be inside data (an enum's object): what
    looks like a keyword there is checked all the same, as it would be no valid JSON Schema."""
    kinds = schema.get("type")
    names = kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []
    for name in names:
        if name not in _TYPE_NAMES:
            raise UnsupportedTypeError(f"JSON Schema type {name!r} is no JSON type")
    ref = schema.get("$ref")
    if ref is None:
        return
    if not isinstance(ref, str) or not _is_local(ref):
        raise UnsupportedTypeError(
            f"cannot follow $ref {ref!r} (at /{where}): only local ones (#/$defs/...) are read"
        )
    if not isinstance(_pointed_at(root, ref), Mapping):
        raise UnsupportedTypeError(f"$ref {ref!r} (at /{where}) points at nothing")


def _same_value_steps(root: Mapping[str, Any], schema: Mapping[str, Any]) -> list[object]:
    """The schemas `schema` checks the very same value against: its `$ref`'s target and its
    allOf, anyOf and oneOf members."""
    steps: list[object] = []
    ref = schema.get("$ref")
    if isinstance(ref, str):
        steps.append(_pointed_at(root, ref))
    for keyword in ("allOf", "anyOf", "oneOf"):
        members = schema.get(keyword)
        if isinstance(members, list):
            steps.extend(members)
    return steps


def _check_ref_cycles(root: dict[str, Any], schemas: list[Mapping[str, Any]]) -> None:
    """UnsupportedTypeError for a `$ref` that comes back to a schema it started from before
    reading a part of the value (`A: {"$ref": "#/$defs/A"}`, or through anyOf): checking a
    value against it would never end. A cycle through properties or items is a recursive
    type, and fine. Depth-first, without recursion."""
    done: set[int] = set()
    on_path: set[int] = set()
    stack: list[tuple[Mapping[str, Any], Iterator[object]]] = []
    for start in schemas:
        if id(start) in done:
            continue
        stack.append((start, iter(_same_value_steps(root, start))))
        on_path.add(id(start))
        while stack:
            node, steps = stack[-1]
            step = next(steps, None)
            if step is None:
                stack.pop()
                on_path.discard(id(node))
                done.add(id(node))
            elif isinstance(step, Mapping) and id(step) not in done:
                if id(step) in on_path:
                    refs = [n.get("$ref") for n, _ in stack if isinstance(n.get("$ref"), str)]
                    raise UnsupportedTypeError(
                        f"$ref {' -> '.join(map(str, refs))} leads back to itself without "
                        "reading any part of the value (a cycle through $ref, anyOf, oneOf "
                        "or allOf): no value could ever be checked against it"
                    )
                on_path.add(id(step))
                stack.append((step, iter(_same_value_steps(root, step))))
