"""The budget of one jinja2 rendering: its counters, the rendering it belongs to, and the walk
that sizes a value before it is turned into text.

Every bounded operation in the sandbox charges the budget of the rendering in progress, found
in a context variable, so no counter is threaded through jinja2's generated code. Outside a
rendering there is no budget and bounded operations refuse to run: that is what keeps jinja2's
compile-time constant folding from running a filter with no limit at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import cast

from chainkit.prompts.errors import PromptError
from chainkit.prompts.limits import TemplateLimits

_HINT = "; pass prompts.TemplateLimits with a higher limit if the template is trusted"

ITEM_CHARS = 8
"""What an item of a list, tuple, set or dict costs against max_chars: its pointer takes the
memory of eight ASCII characters."""

_LIMIT_MEANINGS = {
    "max_steps": "its loops, macros and calls did more work than allowed",
    "max_chars": "it built, copied or scanned more characters or items than allowed",
}


class Budget:
    """What one rendering has spent so far, against its limits."""

    __slots__ = ("chars", "int_bits", "limits", "max_chars", "max_length", "max_steps", "steps")

    def __init__(self, limits: TemplateLimits) -> None:
        self.limits = limits
        self.max_steps = limits.max_steps
        self.max_chars = limits.max_chars
        self.max_length = limits.max_length
        self.int_bits = math.ceil(limits.max_int_digits * math.log2(10))
        self.steps = 0
        self.chars = 0

    def step(self, count: int = 1) -> None:
        """Charges `count` template operations."""
        self.steps += count
        if self.steps > self.max_steps:
            raise self.exceeded("max_steps")

    def spend(self, count: int) -> None:
        """Charges `count` characters or items built, copied or scanned."""
        self.chars += count
        if self.chars > self.max_chars:
            raise self.exceeded("max_chars")

    def allow(self, size: int, what: str, *, items: bool = False) -> None:
        """Refuses a string of `size` characters (or a list of `size` items) that is about to
        be built, when it would be longer than max_length or cost more than is left."""
        if size > self.max_length:
            raise self.too_long(size, what)
        if size * (ITEM_CHARS if items else 1) > self.room():
            raise self.exceeded("max_chars")

    def build(self, size: int, what: str, *, items: bool = False) -> None:
        """Charges a string of `size` characters (or a list of `size` items) built, refusing
        it as `allow` does."""
        self.allow(size, what, items=items)
        self.spend(size * (ITEM_CHARS if items else 1))

    def room(self) -> int:
        """How many more characters or items this rendering may spend."""
        return self.max_chars - self.chars

    def exceeded(self, limit: str) -> PromptError:
        value = getattr(self.limits, limit)
        return PromptError(
            f"template exceeded TemplateLimits.{limit}={value}: {_LIMIT_MEANINGS[limit]}{_HINT}",
            limit=limit,
        )

    def too_long(self, size: int, what: str) -> PromptError:
        return PromptError(
            f"template exceeded TemplateLimits.max_length={self.max_length}: {what} would have "
            f"{size} characters or items{_HINT}",
            limit="max_length",
        )

    def too_many_digits(self, operator: str) -> PromptError:
        return PromptError(
            f"template exceeded TemplateLimits.max_int_digits={self.limits.max_int_digits}: "
            f"{operator!r} would build a larger integer{_HINT}",
            limit="max_int_digits",
        )


_current: ContextVar[Budget | None] = ContextVar("chainkit_template_budget", default=None)


@contextmanager
def rendering(limits: TemplateLimits) -> Iterator[Budget]:
    """A fresh budget for the rendering run inside the block."""
    budget = Budget(limits)
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)


def active_budget() -> Budget | None:
    return _current.get()


def current_budget() -> Budget:
    """The budget of the rendering in progress. Outside one, RuntimeError, which jinja2's
    compile-time folding takes as "not a constant" and leaves the work to the rendering."""
    budget = _current.get()
    if budget is None:
        raise RuntimeError("a bounded template operation ran outside a rendering")
    return budget


@dataclass(slots=True)
class Size:
    """What a walk over a value found: an upper bound on the characters of its text, the items
    in its containers and how deeply they nest."""

    chars: int
    items: int
    depth: int


_SEQUENCES: tuple[type, ...] = (
    list,
    tuple,
    set,
    frozenset,
    type({}.keys()),
    type({}.values()),
    type({}.items()),
)
_CONTAINERS: tuple[type, ...] = (dict, *_SEQUENCES)
_CYCLE = Size(5, 0, 0)  # what repr prints for a container inside itself: [...]


def text_size(value: object, budget: Budget) -> Size:
    """An upper bound on the size of `str(value)` (and of its repr or JSON, up to a small
    factor), charged to the budget before anything is turned into text.

    The walk visits each distinct container once and sums the sizes of shared ones as often
    as they appear, so a structure built by sharing one list many times (`[[x] * 1000] *
    1000`) is sized as the text it would print, in the time its few lists take to read. Each
    item read costs a step; the size found is charged to max_chars, and one larger than the
    budget left ends in PromptError instead of a hang. An object of another type counts as its
    repr, read once however often it is shared: a template cannot build one, but can print
    one its owner passed in (a retrieved page, say) a million times.
    """
    if isinstance(value, str):
        return Size(len(value), 0, 0)
    size = _container_size(value, budget) if _is_container(value) else _leaf_size(value)
    if size.chars > budget.room():
        raise budget.exceeded("max_chars")
    budget.spend(size.chars)
    return size


_Read = tuple[object, list[object], bool]
"""A container as the walk read it: the container, its items, and whether it holds one of
them more than once."""


def _container_size(value: object, budget: Budget) -> Size:
    # Containers in post-order (children first), each read once; then sizes, bottom up. A
    # container is looked up before it is read, and stacked once per parent however often
    # the parent holds it: the walk is linear in the items of the distinct containers.
    order: list[_Read] = []
    seen: set[int] = set()
    stack: list[tuple[object, _Read | None]] = [(value, None)]
    while stack:
        node, read = stack.pop()
        if read is not None:
            order.append(read)
            continue
        if id(node) in seen:
            continue
        children = _children(node)
        if children is None:
            continue
        seen.add(id(node))
        budget.step(len(children))
        distinct = dict(zip(map(id, children), children, strict=True))
        stack.append((node, (node, children, len(distinct) < len(children))))
        stack.extend((child, None) for key, child in distinct.items() if key not in seen)
    return _sizes_bottom_up(order, seen, budget)[id(value)]


def _sizes_bottom_up(order: list[_Read], seen: set[int], budget: Budget) -> dict[int, Size]:
    """The size of each container of `order` (children before parents), by id; a container
    met again inside itself is a cycle. An item a container holds many times is sized once,
    and the sum stops once it passes the budget left."""
    room = budget.room()
    sizes: dict[int, Size] = {}
    for node, children, shared in order:
        chars, items, depth = _overhead(node, len(children)), len(children), 0
        for child in children:
            size = sizes.get(id(child))
            if size is None:
                size = _CYCLE if id(child) in seen else _leaf_size(child)
                if shared:
                    sizes[id(child)] = size
            chars += size.chars
            if chars > room:
                raise budget.exceeded("max_chars")
            items += size.items
            depth = max(depth, size.depth)
        sizes[id(node)] = Size(chars, items, depth + 1)
    return sizes


def _is_container(node: object) -> bool:
    return isinstance(node, _CONTAINERS) or namespace_attributes(node) is not None


def _children(node: object) -> list[object] | None:
    """The values inside a container that str() prints; None for a value that is not one."""
    if isinstance(node, dict):
        return [*node.keys(), *node.values()]
    if isinstance(node, _SEQUENCES):
        return list(cast(Iterable[object], node))
    attributes = namespace_attributes(node)
    return None if attributes is None else [attributes]


def _overhead(node: object, count: int) -> int:
    """The brackets and separators str() writes around the items of `node`."""
    if type(node) in (dict, list, tuple):
        return 2 + 2 * count  # [a, ...] or {k: v, ...}: ", " or ": " per item
    # A named tuple, subclass, view or namespace prints a name and field names too.
    return 24 + 16 * count


_SUBCLASS_NAME = 48
"""What the name a subclass of str prints around its repr may cost."""


def _leaf_size(value: object) -> Size:
    if isinstance(value, str):
        # repr escapes a quote or backslash with one more character, an unprintable one with
        # up to ten (\U0001f600); isprintable is one fast pass in C. A subclass, such as the
        # Markup of `|safe`, may print its name around it: Markup('...').
        chars = (2 if value.isprintable() else 10) * len(value) + 2
        return Size(chars if type(value) is str else chars + _SUBCLASS_NAME, 0, 0)
    if isinstance(value, bool):
        return Size(5, 0, 0)  # False, or false in JSON: an int by type, but not by its text
    if isinstance(value, int):
        # Decimal digits are about 0.302 per bit; the sign and rounding fit in the 2.
        return Size(value.bit_length() * 31 // 100 + 2, 0, 0)
    if isinstance(value, bytes):
        return Size(4 * len(value) + 3, 0, 0)  # b'\xff'
    if isinstance(value, bytearray):
        return Size(4 * len(value) + 14, 0, 0)  # bytearray(b'\xff')
    return Size(_repr_length(value), 0, 0)


_UNPRINTABLE = 48
"""What an object whose repr fails is taken to print: str() of it fails the same way when
printed, so it is only ever tested (`in`, `==`), never printed, and its text costs nothing."""


def _repr_length(value: object) -> int:
    try:
        return len(repr(value))
    except Exception:  # an owner's object may refuse repr; sizing must not be what fails
        return _UNPRINTABLE


def namespace_attributes(value: object) -> dict[str, object] | None:
    """The attributes of a jinja2 `namespace()`, which its repr prints, or None for anything
    else. Read without importing jinja2: a namespace keeps them in a name-mangled slot."""
    if type(value).__name__ != "Namespace":
        return None
    try:
        attributes = object.__getattribute__(value, "_Namespace__attrs")
    except AttributeError:
        return None
    return attributes if isinstance(attributes, dict) else None


def length_or_zero(value: object) -> int:
    """len(value), or 0 for a value without a length."""
    try:
        return len(value)  # type: ignore[arg-type]
    except TypeError:
        return 0


def charge_result(budget: Budget, result: object, what: str) -> None:
    """Charges a value an operation has just built: its length for strings and containers,
    refused over max_length; its size for integers, refused over max_int_digits."""
    if isinstance(result, str | bytes | bytearray):
        budget.build(len(result), what)
    elif isinstance(result, list | tuple | dict | set | frozenset):
        budget.build(len(result), what, items=True)
    elif isinstance(result, int) and result.bit_length() > budget.int_bits:
        raise budget.too_many_digits(what)
