"""JSON schemas built from Python type hints, and validation of JSON values against them.

`compile_type` turns an annotation into a `Spec`, which both describes the type as JSON schema
(for a tool-calling model) and checks and coerces the JSON value a model sent back. Keeping both
in one object means the schema a model sees and the rules applied to its answer cannot drift.

Supported: str, int, float, bool, list[T], dict[str, T], Optional[T] / T | None, unions of
supported types (A | B, as `anyOf`), Literal[...], Enum subclasses, dataclasses and TypedDict
(total or not, Required / NotRequired; recursive ones too), Annotated[T, "description"], Any,
datetime, date, time, UUID and Decimal (as pydantic writes them: ISO 8601 text, a UUID's text, a
number or its text), and pydantic models (once the user's code imported pydantic; chainkit never
does). Anything else raises UnsupportedTypeError (a TypeError) when the spec is built, so a bad
tool fails at definition time, not when a model calls it; each caller raises its own error in
its place.

Every spec's `schema()` is a document of its own: the definitions its `$ref`s point at (a
pydantic model's, a recursive dataclass's) sit in `$defs` at its root, lifted there from the
schemas it is made of.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import math
import sys
import types
import typing
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, NotRequired, Required

from chainkit._errors import ChainkitError
from chainkit._text import shorten

# Python refuses to parse longer digit strings (sys.int_max_str_digits); stop before that.
_MAX_INT_TEXT = 4000
_EXCERPT = 40


class UnsupportedTypeError(ChainkitError, TypeError):
    """A type (or a default) has no JSON schema here. Never reaches a user as such: each
    caller (a tool's definition, a model's output type) raises its own error naming it."""


@dataclass(slots=True, frozen=True)
class ArgumentProblem:
    """One thing wrong with a JSON value: where (`items[2].price`; empty for the whole) and
    what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class _Invalid:
    """Marks a value that failed validation; its problems are already recorded."""


INVALID: Final = _Invalid()


def _excerpt(value: object) -> str:
    """A short JSON rendering of `value` for an error message."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return shorten(text, _EXCERPT)


def key_path(path: str, key: str) -> str:
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def index_path(path: str, index: int) -> str:
    return f"{path}[{index}]"


def _decode_nested(value: object, container: type) -> object:
    """A container a model sent double-encoded as a JSON string, decoded; else `value`."""
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            decoded = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return value
        if isinstance(decoded, container):
            return decoded
    return value


DEFS_PREFIX: Final = "#/$defs/"
# Keywords whose value is a schema, a list of schemas, or a map of names to schemas: the ways
# down a schema to the `$ref`s in it (never into `default`, `enum` or `const`, which are data).
_SCHEMA_KEYWORDS: Final = frozenset(
    ("items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames")
)
_SCHEMA_LIST_KEYWORDS: Final = frozenset(("anyOf", "oneOf", "allOf", "prefixItems"))
_SCHEMA_MAP_KEYWORDS: Final = frozenset(("properties", "patternProperties", "$defs"))


class Definitions:
    """The `$defs` of a schema being built from others: `take` lifts each part's own `$defs`
    to this one, renaming a definition (and the `$ref`s to it in that part) when another of
    the same name says something else."""

    def __init__(self) -> None:
        self.found: dict[str, dict[str, Any]] = {}
        self._reserved: set[str] = set()

    def reserve(self, name: str) -> None:
        """Keeps `name` for a definition added later (`add`): parts taken before it that bring
        a definition of that name have theirs renamed."""
        self._reserved.add(name)

    def add(self, name: str, definition: dict[str, Any]) -> None:
        self.found[name] = definition

    def take(self, schema: dict[str, Any]) -> dict[str, Any]:
        """`schema`, a part of the one being built, without its `$defs`, which join these."""
        defined = schema.pop("$defs", None)
        if not isinstance(defined, dict):
            return schema
        own: dict[str, Any] = defined
        renames: dict[str, str] = {}
        for name, definition in own.items():
            final, number = name, 2
            while final in self._reserved or self.found.get(final, definition) != definition:
                final, number = f"{name}_{number}", number + 1
            if final != name:
                renames[name] = final
        if renames:
            schema = _renamed_refs(schema, renames)
            own = {name: _renamed_refs(body, renames) for name, body in own.items()}
        for name, definition in own.items():
            self.found[renames.get(name, name)] = definition
        return schema

    def into(self, schema: dict[str, Any]) -> dict[str, Any]:
        """`schema` with these definitions at its root."""
        if self.found:
            schema["$defs"] = self.found
        return schema


def _renamed_refs(schema: Any, renames: dict[str, str]) -> Any:
    """A copy of `schema` whose `$ref`s to the definitions in `renames` use the new names."""
    if not isinstance(schema, dict):
        return schema
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str) and value.startswith(DEFS_PREFIX):
            name = value[len(DEFS_PREFIX) :]
            value = DEFS_PREFIX + renames.get(name, name)
        elif key in _SCHEMA_KEYWORDS:
            value = _renamed_refs(value, renames)
        elif key in _SCHEMA_LIST_KEYWORDS and isinstance(value, list):
            value = [_renamed_refs(item, renames) for item in value]
        elif key in _SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            value = {name: _renamed_refs(item, renames) for name, item in value.items()}
        result[key] = value
    return result


class Spec(ABC):
    """A type's JSON schema and the rules for accepting a JSON value as that type."""

    description: str | None = None
    # Whether a model's plain text is a value of this type as it stands (for MRKL text input).
    accepts_text: bool = False
    # Whether plain text may stand for a value, read by `coerce` ("5" for an integer, "red" for
    # an enum): a scalar type. A one-parameter tool of such a type takes MRKL text.
    reads_text: bool = False

    def schema(self) -> dict[str, Any]:
        result = self._schema()
        if self.description:
            result["description"] = self.description
        return result

    def is_typed_as(self, value: object) -> bool:
        """Whether `value`'s own JSON type is this type (or, for a union, one member's)."""
        return self.schema().get("type") == json_type_of(value)

    @abstractmethod
    def _schema(self) -> dict[str, Any]: ...

    @abstractmethod
    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        """`value` converted to this type, or INVALID after appending to `problems`."""

    def _reject(
        self, value: object, path: str, problems: list[ArgumentProblem], expected: str
    ) -> object:
        problems.append(ArgumentProblem(path, f"expected {expected}, got {_excerpt(value)}"))
        return INVALID


class _AnySpec(Spec):
    reads_text = True

    def _schema(self) -> dict[str, Any]:
        return {}

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        return value


class _StringSpec(Spec):
    accepts_text = True
    reads_text = True

    def _schema(self) -> dict[str, Any]:
        return {"type": "string"}

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        if isinstance(value, str):
            return value
        # Models often send an id such as a stock code as a bare number.
        if isinstance(value, int | float) and not isinstance(value, bool):
            return json.dumps(value)
        return self._reject(value, path, problems, "string")


def _integer_from_text(text: str) -> int | None:
    digits = text.strip()
    unsigned = digits[1:] if digits[:1] in ("+", "-") else digits
    if unsigned.isascii() and unsigned.isdigit() and len(unsigned) <= _MAX_INT_TEXT:
        return int(digits)
    return None


class _IntegerSpec(Spec):
    reads_text = True

    def _schema(self) -> dict[str, Any]:
        return {"type": "integer"}

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        if isinstance(value, bool):
            return self._reject(value, path, problems, "integer")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and (number := _integer_from_text(value)) is not None:
            return number
        return self._reject(value, path, problems, "integer")


def _finite_float_from_text(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


class _NumberSpec(Spec):
    reads_text = True

    def _schema(self) -> dict[str, Any]:
        return {"type": "number"}

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        number: float | None = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:
                number = None
        elif isinstance(value, str) and len(value) <= _MAX_INT_TEXT:
            number = _finite_float_from_text(value)
        if number is None or not math.isfinite(number):
            return self._reject(value, path, problems, "number")
        return number


class _BooleanSpec(Spec):
    reads_text = True

    def _schema(self) -> dict[str, Any]:
        return {"type": "boolean"}

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        return self._reject(value, path, problems, "boolean")


class _FormattedTextSpec(Spec):
    """A value written as text in a known format (a date, a UUID): JSON Schema's `format`,
    read back by `parse` (ValueError for text not in the format)."""

    reads_text = True

    def __init__(self, format_name: str, parse: Callable[[str], object], expected: str) -> None:
        self.format_name = format_name
        self.parse = parse
        self.expected = expected

    def _schema(self) -> dict[str, Any]:
        return {"type": "string", "format": self.format_name}

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        if isinstance(value, str) and len(value) <= _MAX_INT_TEXT:
            try:
                return self.parse(value.strip())
            except ValueError:
                pass
        return self._reject(value, path, problems, self.expected)


class _DecimalSpec(Spec):
    """An exact decimal number, given as a JSON number or as its text (as pydantic takes it)."""

    reads_text = True

    def _schema(self) -> dict[str, Any]:
        return {"anyOf": [{"type": "number"}, {"type": "string"}]}

    def is_typed_as(self, value: object) -> bool:
        return json_type_of(value) in ("integer", "number", "string")

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        text = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            text = repr(value)  # a float's shortest text: 0.1 stays 0.1, not 0.1000000000000000055
        elif isinstance(value, str) and len(value) <= _MAX_INT_TEXT:
            text = value.strip()
        if text is not None:
            try:
                number = decimal.Decimal(text)
            except decimal.InvalidOperation:
                number = None
            if number is not None and number.is_finite():
                return number
        return self._reject(value, path, problems, "a decimal number")


class _ArraySpec(Spec):
    def __init__(self, items: Spec | None) -> None:
        self.items = items

    def _schema(self) -> dict[str, Any]:
        if self.items is None:
            return {"type": "array"}
        definitions = Definitions()
        items = definitions.take(self.items.schema())
        return definitions.into({"type": "array", "items": items})

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        value = _decode_nested(value, list)
        if not isinstance(value, list):
            return self._reject(value, path, problems, "array")
        if self.items is None:
            return value
        items = self.items
        result = [items.coerce(item, index_path(path, i), problems) for i, item in enumerate(value)]
        return INVALID if any(item is INVALID for item in result) else result


class _MapSpec(Spec):
    def __init__(self, values: Spec | None) -> None:
        self.values = values

    def _schema(self) -> dict[str, Any]:
        if self.values is None:
            return {"type": "object"}
        definitions = Definitions()
        values = definitions.take(self.values.schema())
        return definitions.into({"type": "object", "additionalProperties": values})

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        value = _decode_nested(value, dict)
        if not isinstance(value, dict):
            return self._reject(value, path, problems, "object")
        if self.values is None:
            return value
        values = self.values
        result = {k: values.coerce(v, key_path(path, k), problems) for k, v in value.items()}
        return INVALID if any(v is INVALID for v in result.values()) else result


class _NullableSpec(Spec):
    def __init__(self, inner: Spec) -> None:
        self.inner = inner
        self.accepts_text = inner.accepts_text
        self.reads_text = inner.reads_text

    def is_typed_as(self, value: object) -> bool:
        return value is None or self.inner.is_typed_as(value)

    def _schema(self) -> dict[str, Any]:
        definitions = Definitions()
        inner = definitions.take(self.inner.schema())
        # A | B | None lists null beside A and B rather than nesting one anyOf in another.
        options = inner["anyOf"] if list(inner) == ["anyOf"] else [inner]
        return definitions.into({"anyOf": [*options, {"type": "null"}]})

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        return None if value is None else self.inner.coerce(value, path, problems)


# bool before int: True is an int to Python but a boolean to JSON.
_JSON_TYPE_NAMES: Final = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def json_type_of(value: object) -> str | None:
    """The JSON schema type name of a decoded JSON value."""
    for python_type, name in _JSON_TYPE_NAMES:
        if isinstance(value, python_type):
            return name
    return None


class _UnionSpec(Spec):
    """A value of any one of `members`, tried in an order that never changes what it means.

    Members whose JSON type is the value's own come first, then numeric near-misses (an integer
    for a number, 3.0 for an integer) and members with no single type (Any, mixed literals),
    and only then members that would coerce it. So for `int | str` the string "3" stays "3"
    and 3 stays 3, while for `int | list[int]` the string "3" still becomes 3. Ties keep the
    declared order.
    """

    def __init__(self, members: list[Spec]) -> None:
        self.members = members
        self.types = [member.schema().get("type") for member in members]
        self.accepts_text = any(member.accepts_text for member in members)
        self.reads_text = any(member.reads_text for member in members)

    def _schema(self) -> dict[str, Any]:
        definitions = Definitions()
        options = [definitions.take(member.schema()) for member in self.members]
        return definitions.into({"anyOf": options})

    def is_typed_as(self, value: object) -> bool:
        return json_type_of(value) in self.types

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        own_type = json_type_of(value)
        near: str | None
        if own_type == "number" and isinstance(value, float) and value.is_integer():
            near = "integer"
        else:
            near = "number" if own_type == "integer" else None

        def rank(index: int) -> int:
            member_type = self.types[index]
            if member_type == own_type:
                return 0
            return 1 if member_type is None or member_type == near else 2

        closest: list[ArgumentProblem] | None = None
        for index in sorted(range(len(self.members)), key=rank):
            attempt: list[ArgumentProblem] = []
            result = self.members[index].coerce(value, path, attempt)
            if result is not INVALID:
                return result
            if closest is None and rank(index) == 0:
                closest = attempt
        if closest:
            # The member of the value's own JSON type says best what is wrong inside it.
            problems.extend(closest)
            return INVALID
        expected = " or ".join(_expectation(member.schema()) for member in self.members)
        return self._reject(value, path, problems, expected)


def _expectation(schema: dict[str, Any]) -> str:
    """How an error message names what a union member takes."""
    if "enum" in schema:
        return expected_one_of(schema["enum"])
    return str(schema.get("type", "a value"))


def _json_type(values: Sequence[object]) -> str | None:
    """The one JSON type all `values` share, if they share one."""
    names = set()
    for value in values:
        if isinstance(value, bool):
            names.add("boolean")
        elif isinstance(value, int):
            names.add("integer")
        elif isinstance(value, float):
            names.add("number")
        elif isinstance(value, str):
            names.add("string")
        else:
            return None
    return names.pop() if len(names) == 1 else None


def _are_json_scalars(values: Sequence[object]) -> bool:
    return all(value is None or isinstance(value, str | int | float) for value in values)


def _match_choice(value: object, choices: Sequence[object]) -> int | None:
    """Index of the choice equal to `value` (type-exact, so True is not 1), or of the choice
    that `value` writes with spaces around it, or as JSON (a model writing "3" for 3); None if
    none."""
    for index, choice in enumerate(choices):
        if type(choice) is type(value) and choice == value:
            return index
    if isinstance(value, str):
        text = value.strip()
        for index, choice in enumerate(choices):
            if choice == text if isinstance(choice, str) else json.dumps(choice) == text:
                return index
    return None


def _choices_text(choices: Sequence[object]) -> str:
    return ", ".join(json.dumps(choice, ensure_ascii=False) for choice in choices)


def expected_one_of(choices: Sequence[object]) -> str:
    """How an error message names a set of allowed values."""
    return f"one of {_choices_text(choices)}"


class _LiteralSpec(Spec):
    reads_text = True

    def __init__(self, choices: tuple[object, ...]) -> None:
        self.choices = choices
        self.accepts_text = any(isinstance(choice, str) for choice in choices)

    def _schema(self) -> dict[str, Any]:
        result: dict[str, Any] = {"enum": list(self.choices)}
        if json_type := _json_type(self.choices):
            result = {"type": json_type, **result}
        return result

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        index = _match_choice(value, self.choices)
        if index is None:
            return self._reject(value, path, problems, expected_one_of(self.choices))
        return self.choices[index]


class _EnumSpec(Spec):
    reads_text = True

    def __init__(self, enum_type: type[enum.Enum]) -> None:
        self.members = list(enum_type)
        self.values = [member.value for member in self.members]
        self.by_name = {member.name: member for member in self.members}
        self.accepts_text = any(isinstance(value, str) for value in self.values)

    def _schema(self) -> dict[str, Any]:
        result: dict[str, Any] = {"enum": list(self.values)}
        if json_type := _json_type(self.values):
            result = {"type": json_type, **result}
        return result

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        index = _match_choice(value, self.values)
        if index is not None:
            return self.members[index]
        # A model sometimes names the member instead of giving its value.
        if isinstance(value, str) and value.strip() in self.by_name:
            return self.by_name[value.strip()]
        return self._reject(value, path, problems, expected_one_of(self.values))


@dataclass(slots=True)
class FieldSpec:
    """One property of an object: a function parameter, dataclass field or TypedDict key."""

    name: str
    spec: Spec
    required: bool
    description: str | None = None
    default: object = INVALID

    def schema(self) -> dict[str, Any]:
        result = self.spec.schema()
        if self.description:
            result["description"] = self.description
        if self.default is not INVALID:
            result["default"] = self.default
        return result


class ObjectSpec(Spec):
    """A JSON object with known properties and no others, built into `build(fields)`.

    The object of a recursive type (a tree's node) is also a definition, `name`, which the
    `$ref`s inside it point at; its schema is the object with that definition beside it."""

    def __init__(
        self,
        fields: Sequence[FieldSpec],
        build: Callable[[dict[str, object]], object] = dict,
        description: str | None = None,
        name: str = "",
    ) -> None:
        self.fields = {field.name: field for field in fields}
        self.build = build
        self.description = description
        self.name = name
        self.recursive = False

    def _schema(self) -> dict[str, Any]:
        definitions = Definitions()
        if self.recursive:
            definitions.reserve(self.name)
        properties = {name: definitions.take(field.schema()) for name, field in self.fields.items()}
        body = {
            "type": "object",
            "properties": properties,
            "required": [name for name, field in self.fields.items() if field.required],
            "additionalProperties": False,
        }
        if self.recursive:
            definition = dict(body)
            if self.description:
                definition["description"] = self.description
            definitions.add(self.name, definition)
        return definitions.into(body)

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        value = _decode_nested(value, dict)
        if not isinstance(value, dict):
            return self._reject(value, path, problems, "object")
        before = len(problems)
        result: dict[str, object] = {}
        for key, item in value.items():
            field = self.fields.get(key)
            if field is None:
                known = ", ".join(self.fields) or "none"
                problems.append(
                    ArgumentProblem(key_path(path, key), f"unknown field (known: {known})")
                )
            else:
                result[key] = field.spec.coerce(item, key_path(path, key), problems)
        for name, field in self.fields.items():
            if field.required and name not in value:
                problems.append(ArgumentProblem(key_path(path, name), "missing required field"))
        if len(problems) > before:
            return INVALID
        try:
            return self.build(result)
        except (TypeError, ValueError) as error:
            # A dataclass's __post_init__ may reject the value; the model should hear why.
            problems.append(ArgumentProblem(path, str(error)))
            return INVALID


class _RefSpec(Spec):
    """A recursive type where it appears inside itself: a `$ref` to its definition."""

    def __init__(self, target: ObjectSpec) -> None:
        self.target = target
        target.recursive = True

    def _schema(self) -> dict[str, Any]:
        return {"$ref": DEFS_PREFIX + self.target.name}

    def is_typed_as(self, value: object) -> bool:
        return isinstance(value, dict)

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        try:
            return self.target.coerce(value, path, problems)
        except RecursionError:
            problems.append(ArgumentProblem(path, "nested too deeply to read"))
            return INVALID


class _PydanticSpec(Spec):
    """A pydantic model: its own JSON schema, and its own validation. pydantic is never
    imported here: a model class can only exist once the user's code imported it."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._errors: tuple[type[Exception], ...] = (
            sys.modules["pydantic"].ValidationError,
            ValueError,
        )

    def _schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = self.model.model_json_schema()
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(DEFS_PREFIX) and "type" not in schema:
            # A recursive model is all `$ref` to its own definition; the object itself goes
            # at the root, where OpenAI's response_format and a tool's parameters need it.
            definitions = schema["$defs"]
            return {**definitions[ref[len(DEFS_PREFIX) :]], "$defs": definitions}
        return schema

    def coerce(self, value: object, path: str, problems: list[ArgumentProblem]) -> object:
        try:
            return self.model.model_validate(value)
        except self._errors as error:
            found = getattr(error, "errors", None)
            if not callable(found):
                problems.append(ArgumentProblem(path, str(error)))
                return INVALID
            for item in found():
                where = path
                for part in item.get("loc", ()):
                    where = (
                        index_path(where, part)
                        if isinstance(part, int)
                        else key_path(where, str(part))
                    )
                problems.append(ArgumentProblem(where, str(item.get("msg", "invalid"))))
            return INVALID


def _is_pydantic_model(annotation: object) -> bool:
    """Whether `annotation` is a pydantic model class; pydantic is looked up, not imported."""
    pydantic = sys.modules.get("pydantic")
    return (
        pydantic is not None
        and isinstance(annotation, type)
        and issubclass(annotation, pydantic.BaseModel)
    )


def json_form(value: object) -> object:
    """`json.dumps` fallback: dataclasses as objects, enums as values, sets as lists, dates and
    times in ISO 8601, UUIDs and decimals as their text; TypeError for anything else."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, set | frozenset):
        return list(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | decimal.Decimal):
        return str(value)
    raise UnsupportedTypeError(f"{type(value).__name__} has no JSON form")


def json_default(value: object) -> object:
    """`value` as it may appear as a schema default, or INVALID when it has no JSON form (NaN
    and infinities included: a schema must be strict JSON)."""
    try:
        return json.loads(json.dumps(value, allow_nan=False, default=json_form))
    except (TypeError, ValueError, RecursionError):
        return INVALID


def defaulted_field(name: str, spec: Spec, default: object, description: str | None) -> FieldSpec:
    """The optional field of a parameter (or dataclass field) that has a `default`.

    A None default makes the type nullable (`x: str = None` takes null, as advertised). Any
    other default with a JSON form is advertised in that form and must be a value of the type,
    else TypeError; one without (NaN, a plain object) is left out of the schema.
    """
    if default is None and spec.coerce(None, "", []) is INVALID:
        spec = _NullableSpec(spec)
    advertised = json_default(default)
    if advertised is not INVALID:
        problems: list[ArgumentProblem] = []
        if spec.coerce(advertised, "", problems) is INVALID:
            details = "; ".join(str(problem) for problem in problems)
            raise UnsupportedTypeError(f"default {default!r} does not fit the type: {details}")
    return FieldSpec(name, spec, required=False, description=description, default=advertised)


def _strip_annotated(annotation: object) -> tuple[object, str | None]:
    """The type inside Annotated[T, ...], and the first string in its metadata."""
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *metadata = typing.get_args(annotation)
        return inner, next((m for m in metadata if isinstance(m, str)), None)
    return annotation, None


def resolved_hints(owner: object) -> dict[str, Any]:
    """`owner`'s type hints, Annotated kept; TypeError when a name in them is undefined."""
    try:
        return typing.get_type_hints(owner, include_extras=True)
    except NameError as error:
        raise UnsupportedTypeError(f"cannot resolve the type hints of {owner!r}: {error}") from None


def _own_docstring(cls: type) -> str | None:
    """The class's first docstring paragraph, unless the docstring was generated (dataclass)."""
    doc = cls.__dict__.get("__doc__")
    if not doc or (dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}(")):
        return None
    return " ".join(doc.strip().split("\n\n")[0].split())


# The object specs of the classes being compiled, outermost first: a class met again inside
# itself is a recursive type, read through a `$ref`.
_Building = dict[type, ObjectSpec]


def _dataclass_spec(cls: type, building: _Building) -> ObjectSpec:
    spec = ObjectSpec((), lambda kwargs: cls(**kwargs), _own_docstring(cls), cls.__name__)
    building = {**building, cls: spec}
    hints = resolved_hints(cls)
    fields = []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        inner, description = _strip_annotated(hints[field.name])
        field_spec = _compile(inner, building)
        if field.default is dataclasses.MISSING:
            has_factory = field.default_factory is not dataclasses.MISSING
            fields.append(FieldSpec(field.name, field_spec, not has_factory, description))
            continue
        try:
            fields.append(defaulted_field(field.name, field_spec, field.default, description))
        except TypeError as error:
            raise UnsupportedTypeError(f"{cls.__name__}.{field.name}: {error}") from None
    spec.fields = {field.name: field for field in fields}
    return spec


def _typeddict_spec(cls: type, building: _Building) -> ObjectSpec:
    spec = ObjectSpec((), description=_own_docstring(cls), name=cls.__name__)
    building = {**building, cls: spec}
    # Decide requiredness from the hints: with `from __future__ import annotations`, Python 3.11
    # misses Required/NotRequired when it fills __required_keys__.
    required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
    for name, hint in resolved_hints(cls).items():
        required = name in required_keys
        origin = typing.get_origin(hint)
        if origin is Required or origin is NotRequired:
            required = origin is Required
            (hint,) = typing.get_args(hint)
        inner, description = _strip_annotated(hint)
        spec.fields[name] = FieldSpec(name, _compile(inner, building), required, description)
    return spec


def compile_type(annotation: object) -> Spec:
    """The Spec for a type annotation; TypeError, naming the type, when it is not supported."""
    return _compile(annotation, {})


def _compile(annotation: object, building: _Building) -> Spec:
    inner, description = _strip_annotated(annotation)
    spec = _compile_bare(inner, building)
    if description:
        spec.description = description
    return spec


_SCALARS: tuple[tuple[object, Callable[[], Spec]], ...] = (
    (str, _StringSpec),
    (int, _IntegerSpec),
    (float, _NumberSpec),
    (bool, _BooleanSpec),
    (Any, _AnySpec),
    (
        datetime.datetime,
        lambda: _FormattedTextSpec(
            "date-time", datetime.datetime.fromisoformat, "an ISO 8601 date-time"
        ),
    ),
    (
        datetime.date,
        lambda: _FormattedTextSpec("date", datetime.date.fromisoformat, "an ISO 8601 date"),
    ),
    (
        datetime.time,
        lambda: _FormattedTextSpec("time", datetime.time.fromisoformat, "an ISO 8601 time"),
    ),
    (uuid.UUID, lambda: _FormattedTextSpec("uuid", uuid.UUID, "a UUID")),
    (decimal.Decimal, _DecimalSpec),
)


def _compile_bare(annotation: object, building: _Building) -> Spec:
    for scalar, make_spec in _SCALARS:
        if annotation is scalar:
            return make_spec()
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is list or origin is list:
        return _ArraySpec(_compile(args[0], building) if args else None)
    if annotation is dict or origin is dict:
        if args and args[0] not in (str, Any):
            raise UnsupportedTypeError(
                f"unsupported type {annotation!r}: JSON object keys are strings"
            )
        return _MapSpec(_compile(args[1], building) if args else None)
    if origin is typing.Union or origin is types.UnionType:
        others = [_compile(arg, building) for arg in args if arg is not type(None)]
        spec = others[0] if len(others) == 1 else _UnionSpec(others)
        return spec if len(others) == len(args) else _NullableSpec(spec)
    if origin is Literal:
        if not _are_json_scalars(args):
            raise UnsupportedTypeError(
                f"unsupported type {annotation!r}: Literal of non-JSON values"
            )
        return _LiteralSpec(args)
    if isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            if not _are_json_scalars([member.value for member in annotation]):
                raise UnsupportedTypeError(
                    f"unsupported type {annotation!r}: enum values must be JSON scalars"
                )
            return _EnumSpec(annotation)
        if annotation in building:
            return _RefSpec(building[annotation])
        if dataclasses.is_dataclass(annotation):
            return _dataclass_spec(annotation, building)
        if typing.is_typeddict(annotation):
            return _typeddict_spec(annotation, building)
        if _is_pydantic_model(annotation):
            return _PydanticSpec(annotation)
    raise UnsupportedTypeError(f"unsupported type {annotation!r}")
