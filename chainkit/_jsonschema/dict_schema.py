"""A JSON Schema given as a dict, checked as it stands: the subset chainkit writes (and
pydantic's `model_json_schema` adds: `$ref` to `#/$defs/...`, `const`, `oneOf`, `allOf`).

Keywords checked: type (one name or a list), enum, const, properties, required,
additionalProperties (true, false or a schema), items, anyOf, oneOf (as anyOf: one match is
enough), allOf and local `$ref`. Every other keyword (title, description, default, format,
bounds) is an annotation here: not checked. Values are taken as they are, never coerced.
"""

from __future__ import annotations

from collections.abc import Mapping
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
        self._check_types(self._root)

    def _schema(self) -> dict[str, Any]:
        return dict(self._root)

    def _check_types(self, schema: object) -> None:
        """UnsupportedTypeError for a `type` no JSON value has: a typo would refuse every value."""
        if isinstance(schema, Mapping):
            kinds = schema.get("type")
            names = kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []
            for name in names:
                if name not in _TYPE_NAMES:
                    raise UnsupportedTypeError(f"JSON Schema type {name!r} is no JSON type")
            for child in schema.values():
                self._check_types(child)
        elif isinstance(schema, list):
            for child in schema:
                self._check_types(child)

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        before = len(problems)
        self._check(self._root, value, path, problems, 0, {})
        return INVALID if len(problems) > before else value

    def _resolve(self, schema: Mapping[str, Any], depth: int) -> Mapping[str, Any]:
        ref = schema.get("$ref")
        while isinstance(ref, str):
            if depth > _MAX_REF_DEPTH or not ref.startswith("#/"):
                raise UnsupportedTypeError(f"cannot follow $ref {ref!r}: only local ones are read")
            target: object = self._root
            for part in ref[2:].split("/"):
                target = target.get(part) if isinstance(target, Mapping) else None
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
