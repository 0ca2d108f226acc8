"""A recursive JSON Schema dict whose `anyOf` branches share their children: checked in time
polynomial in the value (each schema node meets each value once), at any depth the reply
reader takes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chainkit._jsonschema.dict_schema import DictSchemaSpec
from chainkit._jsonschema.output import Invalid, OutputShape
from chainkit._jsonschema.specs import ArgumentProblem, UnsupportedTypeError

# Two object branches alike but for their `kind`: a value of kind "b" fails the first branch
# only at its `kind`, after its whole child was checked against it.
TREE: dict[str, Any] = {
    "$defs": {
        "node": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"kind": {"const": "a"}, "child": {"$ref": "#/$defs/node"}},
                    "required": ["kind"],
                },
                {
                    "type": "object",
                    "properties": {"kind": {"const": "b"}, "child": {"$ref": "#/$defs/node"}},
                    "required": ["kind"],
                },
                {"type": "null"},
            ]
        }
    },
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/node"}},
    "required": ["root"],
}


def tree(depth: int, leaf: object = None) -> dict[str, Any]:
    node: object = leaf
    for _ in range(depth):
        node = {"kind": "b", "child": node}
    return {"root": node}


class CountingSpec(DictSchemaSpec):
    """Counts the schema nodes checked against a value (memoised ones included)."""

    checks = 0

    def _check(self, *arguments: Any) -> None:
        CountingSpec.checks += 1
        super()._check(*arguments)


@pytest.mark.timeout(30)
def test_a_recursive_any_of_thirty_deep_is_checked_at_once() -> None:
    shape = OutputShape(TREE)
    value = tree(30)
    assert shape.read_text(json.dumps(value)) == value
    # A leaf that fits no branch: the problem is named where it is, under the nearest branch.
    bad = tree(30, leaf={"kind": "c"})
    invalid = shape.read_text(json.dumps(bad))
    assert isinstance(invalid, Invalid)
    assert ".child" * 29 in str(invalid) and "kind: expected one of" in str(invalid)


def test_the_checks_grow_linearly_with_the_depth() -> None:
    counts = []
    for depth in (10, 20, 40):
        CountingSpec.checks = 0
        problems: list[ArgumentProblem] = []
        CountingSpec(TREE).coerce(tree(depth), "", problems)
        assert problems == []
        counts.append(CountingSpec.checks)
    assert counts[2] - counts[1] == 2 * (counts[1] - counts[0])


@pytest.mark.timeout(30)
def test_a_value_as_deep_as_a_reply_may_be_is_checked() -> None:
    # Before, the depth of the value counted towards the limit on following $refs.
    value = tree(190)
    assert OutputShape(TREE).read_text(json.dumps(value)) == value


def test_a_ref_cycle_that_never_reaches_a_value_is_still_refused() -> None:
    looping = {"anyOf": [{"$ref": "#"}, {"type": "string"}]}
    with pytest.raises(UnsupportedTypeError, match="leads back to itself"):
        DictSchemaSpec(looping).coerce(3, "", [])
