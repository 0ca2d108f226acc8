"""The sandbox's bounded operations: what a template's loops, operators, comparisons, calls
and output cost, charged to the rendering's budget before the work is done.

Two kinds of work are told apart. Work proportional to values that already exist (scanning,
copying, printing) is charged by their size, so doing it again and again runs out of budget.
Work whose result size is set by an argument (`'x' * n`, `center(n)`, `zfill(n)`, a `%9999d`
width, `replace` with a longer text) is estimated first and refused before anything is
allocated.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import jinja2.runtime
import jinja2.sandbox
from markupsafe import EscapeFormatter

from chainkit.prompts._messages_as_text import holds_messages, messages_as_text
from chainkit.prompts._sandbox.budget import (
    Budget,
    charge_result,
    current_budget,
    length_or_zero,
    text_size,
)

_TEXTS = (str, bytes, bytearray)
_SEQUENCES = (str, bytes, bytearray, list, tuple)
_CONTAINERS = (list, tuple, dict, set, frozenset)
# Printed as they are or in a few characters (an int has at most max_int_digits digits).
_PLAIN = frozenset({str, int, bool, float, type(None)})


# --- loops and macro bodies ------------------------------------------------------------------


class Counted:
    """An iterable whose every item charges `cost` steps: the operations of one pass through
    the body of the loop that iterates it. Sized when the underlying iterable is, so
    `loop.length` stays cheap."""

    __slots__ = ("_budget", "_items", "_iterator", "cost")

    def __init__(self, items: Iterable[Any], cost: int) -> None:
        self._budget = current_budget()
        self._items = items
        self._iterator = iter(items)
        self.cost = cost

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        item = next(self._iterator)
        budget = self._budget
        budget.steps += self.cost  # Budget.step, inlined: this runs once per loop iteration
        if budget.steps > budget.max_steps:
            raise budget.exceeded("max_steps")
        return item

    def __len__(self) -> int:
        return len(self._items)  # type: ignore[arg-type]  # TypeError tells jinja2 "unsized"


def charge_body(cost: int) -> None:
    """Charges one run of a macro, call block or block body of `cost` operations."""
    current_budget().step(cost)


def recursive_loop_items(loop: jinja2.runtime.LoopContext, items: Iterable[Any]) -> Counted:
    """The items of a recursive `loop(...)` call, charged like those of the loop itself."""
    outer = getattr(loop, "_iterable", None)
    return Counted(items, outer.cost if isinstance(outer, Counted) else 1)


def take_slice(sequence: Any, start: Any, stop: Any, step: Any) -> Any:
    """`sequence[start:stop:step]`, charged by the length of the copy."""
    result = sequence[start:stop:step]
    charge_result(current_budget(), result, "a slice")
    return result


def hashed(key: Any) -> Any:
    """`key`, after charging what hashing it reads: a tuple is hashed item by item each time
    (text caches its hash, numbers are cheap)."""
    if isinstance(key, tuple | frozenset):
        text_size(key, current_budget())
    return key


# --- output and concatenation ----------------------------------------------------------------


def as_text(value: object, budget: Budget) -> str:
    """`str(value)`, after sizing it (see text_size) so that printing cannot hang."""
    if type(value) in _PLAIN:
        return str(value)
    if isinstance(value, str):
        return value
    text_size(value, budget)
    return str(value)


def join_output(chunks: Iterable[str]) -> str:
    """The environment's `concat`: joins the pieces of a rendering, a macro's output or a
    captured block, counting as it goes, so output is refused when it passes max_length
    instead of after it was all produced."""
    budget = current_budget()
    pieces: list[str] = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > budget.max_length:
            raise budget.too_long(total, "the output")
        pieces.append(chunk)
    budget.spend(total)
    return "".join(pieces)


def finalize(value: object) -> object:
    """Sizes a value printed by `{{ ... }}` before jinja2 turns it into text; refuses
    messages, whose text would be their reprs."""
    if type(value) in _PLAIN:
        return value
    if holds_messages(value):
        raise messages_as_text(None)
    text_size(value, current_budget())
    return value


def concatenate(*parts: object) -> str:
    """The `~` operator: every part as text, joined."""
    budget = current_budget()
    texts = [as_text(part, budget) for part in parts]
    budget.build(sum(map(len, texts)), "'~'")
    return "".join(texts)


# --- comparisons -----------------------------------------------------------------------------

_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "lteq": operator.le,
    "gt": operator.gt,
    "gteq": operator.ge,
    "in": lambda item, container: item in container,
    "notin": lambda item, container: item not in container,
}


_MEMBERSHIP = frozenset({"in", "notin"})


def compare(left: object, *chain: Any) -> Any:
    """A comparison chain `left op right [op right ...]`, each comparison charged by what it
    reads. Like Python's, it stops at the first false result and returns the last one."""
    budget = current_budget()
    result: Any = True
    for index in range(0, len(chain), 2):
        op, right = chain[index], chain[index + 1]
        # Most comparisons in a chat template are between short strings or numbers: those
        # are charged here, without the calls charge_comparison makes.
        if type(left) is str and type(right) is str:
            budget.chars += len(right) if op in _MEMBERSHIP else min(len(left), len(right))
            if budget.chars > budget.max_chars:
                raise budget.exceeded("max_chars")
        elif not (type(left) in _PLAIN and type(right) in _PLAIN):
            charge_comparison(budget, op, left, right)
        result = _COMPARISONS[op](left, right)
        if not result:
            return result
        left = right
    return result


def charge_comparison(budget: Budget, op: str, left: object, right: object) -> None:
    if op in _MEMBERSHIP:
        if isinstance(right, _TEXTS):
            budget.spend(len(right))
        elif isinstance(right, dict | set | frozenset):
            # Hashing reads the key: text hashes once, a tuple every time.
            if not isinstance(left, str | int | float):
                text_size(left, budget)
        elif isinstance(right, list | tuple):
            text_size(right, budget)
        return
    if isinstance(left, _TEXTS) and isinstance(right, _TEXTS):
        budget.spend(min(len(left), len(right)))
    elif isinstance(left, _CONTAINERS) or isinstance(right, _CONTAINERS):
        text_size(left, budget)
        text_size(right, budget)


# --- operators -------------------------------------------------------------------------------


def check_binop(budget: Budget, op: str, left: object, right: object) -> None:
    """Refuses, before it is computed, a result that would be too long or too large."""
    if op == "*":
        if isinstance(left, int) and isinstance(right, int):
            if left.bit_length() + right.bit_length() > budget.int_bits:
                raise budget.too_many_digits(op)
        elif isinstance(left, _SEQUENCES) and isinstance(right, int):
            budget.allow(len(left) * right, f"{op!r}", items=_has_items(left))
        elif isinstance(left, int) and isinstance(right, _SEQUENCES):
            budget.allow(left * len(right), f"{op!r}", items=_has_items(right))
    elif op == "+":
        if isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
            budget.allow(len(left) + len(right), f"{op!r}", items=_has_items(left))
    elif op == "**":
        if _power_too_big(left, right, budget.int_bits):
            raise budget.too_many_digits(op)
    elif op == "%" and isinstance(left, str):
        budget.allow(percent_format_size(budget, left, right), "'%' formatting")
    elif isinstance(left, set | frozenset | dict) or isinstance(right, set | frozenset | dict):
        budget.spend(length_or_zero(left) + length_or_zero(right))


def _has_items(sequence: object) -> bool:
    return isinstance(sequence, list | tuple)


def _power_too_big(base: object, exponent: object, int_bits: int) -> bool:
    """Whether integer `base ** exponent` would pass the limit, judged from log2 of the result.
    A negative exponent gives a float, which overflows by raising, not by growing."""
    if not (isinstance(base, int) and isinstance(exponent, int)):
        return False
    if exponent <= 0 or abs(base) <= 1:
        return False
    # An exponent over the bit limit passes it for any base of 2 or more; checking it first
    # also keeps the float product below from overflowing.
    # math.log2 of a huge int is computed from its bits; float(base) would overflow.
    return exponent > int_bits or math.log2(abs(base)) * exponent > int_bits


# A %-conversion spec after its mapping key: flags, width, precision. Possessive quantifiers
# and the anchored match keep this linear on any input.
_PERCENT_SPEC = re.compile(r"[#0\- +]*+(\*|\d*+)(?:\.(\*|\d*+))?")
_PARENTHESIS = re.compile(r"[()]")
_HUGE = 10**12  # stands for a width whose digits are too many to be worth reading
_SPEC_STEPS = 5  # reading one spec or parenthesis takes a regex search and a few operations


def percent_format_size(budget: Budget, template: str, values: object) -> int:
    """An upper bound on the length of `template % values`: the template, every width and
    precision it asks for, and the text of every value."""
    widths, stars, position = 0, 0, template.find("%")
    while position != -1:
        budget.step(_SPEC_STEPS)
        position += 1
        if template.startswith("(", position):
            position = _after_mapping_key(budget, template, position + 1)
            if position < 0:
                break  # an unterminated key: formatting raises ValueError
        spec = _PERCENT_SPEC.match(template, position)
        assert spec is not None  # every part of the pattern may be empty
        for number in spec.groups():
            if number == "*":
                stars += 1
            elif number:
                widths += int(number) if len(number) <= 12 else _HUGE
        position = template.find("%", spec.end() + 1)
    size = len(template) + widths
    arguments = values if isinstance(values, tuple) else (values,)
    if stars:
        size += sum(abs(value) for value in arguments if isinstance(value, int))
    return size + text_size(values, budget).chars


def _after_mapping_key(budget: Budget, template: str, position: int) -> int:
    # Python matches the parentheses of a `%(key)s` mapping key by counting them.
    depth = 1
    while depth:
        budget.step(_SPEC_STEPS)
        found = _PARENTHESIS.search(template, position)
        if found is None:
            return -1
        depth += 1 if found.group() == "(" else -1
        position = found.end()
    return position


_DIGITS = re.compile(r"\d+")


class BoundedFormatter(jinja2.sandbox.SandboxedFormatter):
    """The sandbox's `str.format` formatter, refusing a field whose width or precision would
    build too long a text, and sizing each value before it is formatted."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        text_size(value, current_budget())
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        budget = current_budget()
        widths = sum(
            int(number) if len(number) <= 12 else _HUGE for number in _DIGITS.findall(format_spec)
        )
        budget.build(widths + text_size(value, budget).chars, "a str.format field")
        return super().format_field(value, format_spec)


class BoundedEscapeFormatter(BoundedFormatter, EscapeFormatter):
    """BoundedFormatter for `Markup.format`, which escapes what it inserts."""


# --- calls -----------------------------------------------------------------------------------


CALL_STEPS = 20
"""What a call costs in steps besides its body: the sandbox's checks and jinja2's argument
handling take about as long as twenty template operations."""


def check_call(
    budget: Budget, function: object, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[Any, ...]:
    """Charges a call by what it reads, refuses one of a built-in method whose result would be
    too long, and returns the arguments to call it with (an iterable to join is read into a
    list first, so it can be measured)."""
    budget.step(CALL_STEPS)
    if args or kwargs:
        budget.spend(
            sum(len(arg) for arg in (*args, *kwargs.values()) if isinstance(arg, _CONTAINERS))
        )
    if function is dict or isinstance(getattr(function, "__self__", None), dict):
        # Building or reading a dict hashes the keys it is given.
        text_size((args, kwargs), budget)
    receiver = getattr(function, "__self__", None)
    if receiver is None:
        return args
    name = getattr(function, "__name__", "")
    if isinstance(receiver, _TEXTS):
        return _check_text_method(budget, receiver, name, args, kwargs)
    if isinstance(receiver, list | tuple) and name in ("count", "index"):
        text_size(receiver, budget)
    elif isinstance(receiver, _CONTAINERS):
        budget.spend(len(receiver))
    elif isinstance(receiver, jinja2.runtime.LoopContext) and name == "changed":
        text_size(args, budget)  # compared with the values of the previous iteration
    elif isinstance(receiver, int) and name == "to_bytes":
        budget.allow(_int_argument(args, kwargs, "length", 1), "int.to_bytes")
    elif receiver is dict and name == "fromkeys" and args:
        budget.allow(length_or_zero(args[0]), "dict.fromkeys", items=True)
    return args


def _check_text_method(
    budget: Budget,
    text: str | bytes | bytearray,
    name: str,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
) -> tuple[Any, ...]:
    size = len(text)
    if name in ("startswith", "endswith"):
        text_size(args, budget)  # the prefixes or suffixes, compared with the text
    elif name in ("center", "ljust", "rjust", "zfill"):
        budget.allow(max(size, _int_argument(args, kwargs, "width", 0)), f"str.{name}")
    elif name == "expandtabs":
        tab = "\t" if isinstance(text, str) else b"\t"
        tab_size = _int_argument(args, kwargs, "tabsize", 8)
        spaces = max(tab_size, 0) * text.count(tab)  # type: ignore[arg-type]
        budget.allow(size + spaces, f"str.{name}")
    elif name == "replace" and len(args) >= 2:
        count = _int_argument(args[2:], kwargs, "count", -1)
        budget.allow(replaced_size(text, args[0], args[1], count), f"str.{name}")
    elif name == "join" and args:
        items = list(args[0])
        budget.step(len(items))
        joined = sum(length_or_zero(item) for item in items) + size * max(len(items) - 1, 0)
        budget.allow(joined, f"str.{name}")
        return (items, *args[1:])
    elif name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((length_or_zero(value) for value in args[0].values()), default=1)
        budget.allow(size * max(longest, 1), f"str.{name}")
    else:
        budget.spend(size)
    return args


def replaced_size(text: Any, old: Any, new: Any, count: int) -> int:
    """An upper bound on the length of `text.replace(old, new, count)`."""
    if not (isinstance(old, type(text)) and isinstance(new, type(text))):
        return len(text)  # replace raises TypeError
    found = len(text) + 1 if not old else text.count(old)
    if count >= 0:
        found = min(found, count)
    return len(text) + found * max(len(new) - len(old), 0)


def _int_argument(args: Sequence[Any], kwargs: Mapping[str, Any], name: str, default: int) -> int:
    """The first positional argument, or the keyword `name`, when it is an int."""
    value = args[0] if args else kwargs.get(name, default)
    return value if isinstance(value, int) else default


def charge_call_result(budget: Budget, function: object, result: object) -> None:
    # A macro's output was counted when its pieces were joined.
    if not isinstance(function, jinja2.runtime.Macro):
        charge_result(budget, result, getattr(function, "__name__", "a call"))
