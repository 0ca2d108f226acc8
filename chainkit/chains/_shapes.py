"""What a pipeline's steps give and take, and the rule fitting one to the next, checked when
the pipeline is built.

A step gives either a dict (`Keys`: the keys it surely holds) or one value (`Value`: its
Python type, `Any` when unknown). Between two steps, a value and a dict of one key turn into
each other where the next step wants the other, and a model's reply Message goes on as its
text to a step that takes `str`. Anything else that cannot fit is a `ChainWiringError` naming
both steps, what one gives, what the other takes and, where one is near, the key meant.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from chainkit.chains.errors import ChainWiringError
from chainkit.schema import Message


@dataclass(frozen=True, slots=True)
class Keys:
    """A dict holding at least the keys `known`; with `carries_inputs`, the pipeline's inputs
    pass through in it, so any input key given may be there too."""

    known: frozenset[str]
    carries_inputs: bool = False

    def __str__(self) -> str:
        if not self.carries_inputs:
            return f"a dict of {sorted(self.known)}" if self.known else "a dict"
        if not self.known:
            return "the inputs dict"
        return f"the inputs dict with {sorted(self.known)} added"


@dataclass(frozen=True, slots=True)
class Value:
    """One value of type `type` (`Any` when the step cannot say)."""

    type: Any = Any

    def __str__(self) -> str:
        return f"one value ({type_name(self.type)})"


Shape = Keys | Value

Adapt = Callable[[Any], Any]
"""Turns the value a step gets into the one it takes (a key's value, a dict of one key, a
message's text); None where they are the same."""


@dataclass(slots=True)
class Wiring:
    """What fitting the steps of one pipeline found: the input keys its steps need from the
    pipeline's inputs, in the order first needed. `shared` says the value being fitted to
    goes to several steps at once (a dict's, a branch's, fallbacks'): a key one of them leaves
    unused may be another's, so none is refused for it."""

    inputs: list[str] = field(default_factory=list)
    shared: bool = False

    def for_members(self) -> Wiring:
        """The wiring of steps that share the value they get."""
        return Wiring(self.inputs, shared=True)

    def for_next(self) -> Wiring:
        """The wiring of a step that alone gets the value of the step before it."""
        return self if not self.shared else Wiring(self.inputs)

    def need_input(self, key: str) -> None:
        if key not in self.inputs:
            self.inputs.append(key)


def type_name(kind: object) -> str:
    if kind is Any:
        return "any type"
    if _is_union(kind):
        return " | ".join(type_name(member) for member in typing.get_args(kind))
    if isinstance(kind, type) and not typing.get_args(kind):
        return kind.__name__
    text = str(kind)
    for module in ("typing.", "collections.abc.", "chainkit.schema.message."):
        text = text.replace(module, "")
    return text


TEXT = Union[str, Message]  # noqa: UP007  # a value that stays an object at run time
"""What a step taking text takes: a str, or a model's reply Message (its text)."""


def text_of(value: Any) -> Any:
    """A Message's text; anything else as it is (a str, or what the step will refuse)."""
    return value.content if type(value) is Message else value


def into_keys(
    given: Shape, required: Sequence[str], wiring: Wiring, before: str, step: str
) -> Adapt | None:
    """How a step needing the keys `required` takes what the step `before` gives."""
    if isinstance(given, Value):
        _check_whole(given, before, step)
        if len(required) == 1 and not is_dict_type(given.type):
            key = required[0]
            if given.type is Any:  # a dict that comes is the keys; anything else the key's value
                return lambda value: value if isinstance(value, Mapping) else {key: value}
            return lambda value: {key: value}
        if is_dict_type(given.type) or given.type is Any:
            return None  # a dict whose keys are known only when it comes: checked then
        raise ChainWiringError(
            f"{step} needs the keys {list(required)}, and {before} gives {given}: put a dict "
            f"step between them, e.g. {{{', '.join(repr(k) + ': ...' for k in required)}}}"
        )
    missing = [key for key in required if key not in given.known]
    if given.carries_inputs:
        for key in missing:
            wiring.need_input(key)
        return None
    if missing:
        raise ChainWiringError(
            f"{step} needs the key(s) {missing}, which {before} does not give: it gives "
            f"{sorted(given.known)}{_did_you_mean(missing, given.known)}"
        )
    return None


def check_unused(given: Shape, used: Sequence[str], wiring: Wiring, before: str, step: str) -> None:
    """Refuses keys that `before` makes for `step` alone and `step` would ignore: a value
    computed to be dropped, most often under a misspelt key."""
    if not isinstance(given, Keys) or given.carries_inputs or wiring.shared:
        return
    unused = sorted(given.known.difference(used))
    if unused:
        missing = [name for name in used if name not in given.known]
        raise ChainWiringError(
            f"{step} does not use the key(s) {unused} that {before} gives; its variables are "
            f"{sorted(used)}{_did_you_mean(missing, unused)}. Remove them, or use them in "
            f"{step}"
        )


def into_value(given: Shape, wanted: object, before: str, step: str) -> Adapt | None:
    """How a step taking one value of type `wanted` takes what the step `before` gives."""
    if isinstance(given, Keys):
        if is_dict_type(wanted) or wanted is Any:
            return None
        if len(given.known) == 1 and not given.carries_inputs:
            (key,) = given.known
            return lambda outputs: outputs[key]
        hint = ": pick the value it takes with chains.pick('<key>') before it"
        if given.known:
            hint = f": did you mean chains.pick({sorted(given.known)[0]!r}) between them?"
        raise ChainWiringError(f"{step} takes {Value(wanted)}, and {before} gives {given}{hint}")
    if wanted is not Any and not is_stream(wanted):
        _check_whole(given, before, step)
    if wanted is TEXT or wanted is str:
        if _may_fit(given.type, TEXT):
            return text_of if given.type is not str else None
    elif _may_fit(given.type, wanted):
        return None
    raise ChainWiringError(f"{step} takes {Value(wanted)}, and {before} gives {given}")


def is_stream(kind: object) -> bool:
    """Whether values of type `kind` are pieces that come one by one (an iterator, a
    generator), not a whole value."""
    origin = typing.get_origin(kind) or kind
    return isinstance(origin, type) and issubclass(origin, Iterator | AsyncIterator)


def _check_whole(given: Value, before: str, step: str) -> None:
    """Refuses a stream of pieces for a step that takes a whole value."""
    if is_stream(given.type):
        raise ChainWiringError(
            f"{before} gives a stream of pieces ({type_name(given.type)}), and {step} takes a "
            f"whole value: make {before} return the value whole (a list, or the joined text)"
        )


def _did_you_mean(names: Sequence[str], choices: typing.Iterable[str]) -> str:
    choices = sorted(choices)
    if len(names) == 1 and len(choices) == 1:
        return f" (did you mean {choices[0]!r} for {names[0]!r}?)"
    for name in names:
        close = difflib.get_close_matches(name, choices, n=1)
        if close:
            return f" (did you mean {close[0]!r} for {name!r}?)"
    return ""


def is_dict_type(kind: object) -> bool:
    origin = typing.get_origin(kind) or kind
    if typing.is_typeddict(kind):
        return True
    return isinstance(origin, type) and issubclass(origin, Mapping)


def _may_fit(given: object, wanted: object) -> bool:
    """Whether a value of type `given` may be what a step taking `wanted` takes: False only
    when it surely cannot (what the types leave open is found at run time)."""
    if given is Any or wanted is Any or wanted is object:
        return True
    if _is_union(given):
        return any(_may_fit(member, wanted) for member in typing.get_args(given))
    if _is_union(wanted):
        return any(_may_fit(given, member) for member in typing.get_args(wanted))
    if typing.get_origin(given) is typing.Literal:
        return any(_may_fit(type(value), wanted) for value in typing.get_args(given))
    if typing.get_origin(wanted) is typing.Literal:
        return _may_fit(given, Union[tuple(type(v) for v in typing.get_args(wanted))])  # noqa: UP007
    given_origin = typing.get_origin(given) or given
    wanted_origin = typing.get_origin(wanted) or wanted
    if typing.is_typeddict(wanted):
        wanted_origin = dict
    if typing.is_typeddict(given):
        given_origin = dict
    if not isinstance(given_origin, type) or not isinstance(wanted_origin, type):
        return True  # a form these rules do not read: found at run time
    if wanted_origin is float and given_origin is int:
        return True
    if not issubclass(given_origin, wanted_origin):
        return False
    given_args, wanted_args = typing.get_args(given), typing.get_args(wanted)
    if given_args and wanted_args and len(given_args) == len(wanted_args):
        return all(_may_fit(g, w) for g, w in zip(given_args, wanted_args, strict=True))
    return True


def _is_union(kind: object) -> bool:
    return typing.get_origin(kind) in (Union, types.UnionType)
