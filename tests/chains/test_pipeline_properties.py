"""Any pipeline of pure functions gives what calling the functions one after another gives,
through `|` as through chains.pipe, sync and async."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit import chains

FUNCTIONS: dict[str, Callable[[int], int]] = {
    "add3": lambda n: n + 3,
    "double": lambda n: n * 2,
    "negate": lambda n: -n,
    "mod7": lambda n: n % 7,
}


def as_step(name: str) -> Any:
    """A step of the pipeline, and the plain function it must equal."""
    if name == "pair":
        # A dict step and the function reading its dict: equal to add3(n) * double(n).
        return {"left": FUNCTIONS["add3"], "right": FUNCTIONS["double"]}
    return chains.step(FUNCTIONS[name], name=name)


def direct(names: list[str], value: int) -> int:
    for name in names:
        if name == "pair":
            value = FUNCTIONS["add3"](value) * FUNCTIONS["double"](value)
        else:
            value = FUNCTIONS[name](value)
    return value


def built(names: list[str], with_operator: bool) -> chains.Pipeline:
    steps: list[Any] = []
    for name in names:
        steps.append(as_step(name))
        if name == "pair":
            steps.append(chains.step(lambda pair: pair["left"] * pair["right"], name="times"))
    if with_operator:
        return functools.reduce(lambda left, right: left | right, steps[1:], chains.pipe(steps[0]))
    return chains.pipe(*steps)


names = st.lists(st.sampled_from([*FUNCTIONS, "pair"]), min_size=1, max_size=6)


@settings(max_examples=60)
@given(names=names, value=st.integers(-1000, 1000), with_operator=st.booleans())
def test_a_pipeline_of_functions_equals_calling_them_in_turn(
    names: list[str], value: int, with_operator: bool
) -> None:
    pipeline = built(names, with_operator)
    expected = direct(names, value)
    assert chains.call(pipeline, {"input": value}) == {"output": expected}
    assert asyncio.run(chains.acall(pipeline, {"input": value})) == {"output": expected}
