"""A tool's arguments in words, from its JSON schema: for a text prompt, where the model writes
them, and for an error saying what was expected. One wording for every kind of tool."""

from __future__ import annotations

import json
from typing import Any


def schema_types(schema: object) -> list[str]:
    """The JSON types a property's schema allows, its `anyOf`/`oneOf` members included."""
    if not isinstance(schema, dict):
        return []
    declared = schema.get("type")
    found = [declared] if isinstance(declared, str) else []
    if isinstance(declared, list):
        found.extend(t for t in declared if isinstance(t, str))
    for key in ("anyOf", "oneOf"):
        members = schema.get(key)
        if isinstance(members, list):
            for member in members:
                found.extend(schema_types(member))
    return found


def properties(schema: object) -> dict[str, Any]:
    """The properties of an object schema; {} for a schema without any."""
    found = schema.get("properties") if isinstance(schema, dict) else None
    return found if isinstance(found, dict) else {}


def required(schema: object) -> list[str]:
    """The names an object schema requires."""
    listed = schema.get("required") if isinstance(schema, dict) else None
    return [name for name in listed if isinstance(name, str)] if isinstance(listed, list) else []


def takes_one_string(schema: object) -> bool:
    """Whether the arguments are a single string field: plain text stands for them."""
    fields = properties(schema)
    return len(fields) == 1 and "string" in schema_types(next(iter(fields.values())))


def fields_text(schema: object, *, descriptions: bool = False) -> str:
    """`a (integer, required), b (integer, default 0)`: each field with its type, and whether
    it is required or its default; with `descriptions`, what the schema says each is for."""
    needed = required(schema)
    parts = []
    for name, field in properties(schema).items():
        traits = [_type_text(field)] + (["required"] if name in needed else [])
        if isinstance(field, dict) and "default" in field:
            traits.append(f"default {json.dumps(field['default'], ensure_ascii=False)}")
        part = f"{name} ({', '.join(traits)})"
        about = field.get("description") if isinstance(field, dict) else None
        if descriptions and isinstance(about, str) and about:
            part += f": {about}"
        parts.append(part)
    return ("; " if descriptions else ", ").join(parts)


def prompt_arguments(schema: object) -> str:
    """What a text prompt adds to a tool's description so the model can write its arguments
    right: '' for a tool taking one string (plain text will do) or nothing."""
    if not properties(schema) or takes_one_string(schema):
        return ""
    return f" Arguments, as a JSON object: {fields_text(schema, descriptions=True)}"


def _type_text(schema: object) -> str:
    choices = schema.get("enum") if isinstance(schema, dict) else None
    if isinstance(choices, list) and choices:
        return "one of " + ", ".join(json.dumps(choice, ensure_ascii=False) for choice in choices)
    types = [t for t in schema_types(schema) if t != "null"]
    return " or ".join(dict.fromkeys(types)) or "any"
