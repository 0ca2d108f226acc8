"""jinja2's filters and tests, each charged to the rendering's budget before it runs.

Every call costs a step. What it reads is charged by size: cheap filters (`length`, `first`)
by nothing more, filters that walk a sequence item by item in Python by its length, filters
that turn a value into text or compare its items by the walk of text_size. Filters whose output
grows with an argument (`center`, `indent`, `wordwrap`, `replace`, `format`, `join`, `tojson`
with an indent, `batch` and `slice` with many fill items, ...) are refused before they run
when the output would be too long. Whatever a filter returns is charged by its length.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jinja2.utils import generate_lorem_ipsum

from chainkit.prompts._sandbox.bounded import (
    as_text,
    charge_comparison,
    percent_format_size,
    replaced_size,
)
from chainkit.prompts._sandbox.budget import (
    Budget,
    charge_result,
    current_budget,
    length_or_zero,
    text_size,
)

Arguments = tuple[Any, tuple[Any, ...], dict[str, Any]]
"""A filter's value, its other positional arguments and its keyword arguments."""

Check = Callable[[Budget, Any, tuple[Any, ...], dict[str, Any]], Arguments]
"""Charges a filter call before it runs, refusing it when it would exceed the budget, and
returns the arguments to run it with."""


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    """Argument `index` (counted after the value) or keyword `name`; None when not given."""
    return args[index] if len(args) > index else kwargs.get(name)


def _listed(value: Any) -> Any:
    # An iterator (a `map` or `select` result) is read into a list so it can be measured;
    # what producing its items costs was charged by the filters that produce them.
    return list(value) if isinstance(value, Iterator) else value


def constant_check(
    budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    return value, args, kwargs


def _per_item(
    budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    # One Python-level step per item: attribute lookups, tests, key functions.
    count = length_or_zero(value)
    budget.step(count)
    budget.spend(count)
    return value, args, kwargs


def text_check(
    budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    text_size(value, budget)
    return value, args, kwargs


def _words(budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
    # Filters that loop over the words of a text in Python (title, wordwrap's textwrap,
    # urlize): about one step per word.
    size = text_size(value, budget).chars
    budget.step(size // 4)
    return value, args, kwargs


def _sorting(
    budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    value = _listed(value)
    count = length_or_zero(value)
    size = text_size(value, budget).chars
    budget.step(count)
    # Sorting compares each item about log2(count) times.
    budget.spend(size * max(count.bit_length() - 1, 0))
    return value, args, kwargs


def _center(budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
    width = _argument(args, kwargs, 0, "width")
    size = text_size(value, budget).chars
    budget.allow(max(size, width if isinstance(width, int) else 80), "the center filter")
    return value, args, kwargs


def _indent(budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
    width = _argument(args, kwargs, 0, "width")
    prefix = len(width) if isinstance(width, str) else width if isinstance(width, int) else 4
    size = text_size(value, budget).chars
    lines = value.count("\n") + 1 if isinstance(value, str) else size + 1
    budget.allow(size + lines * max(prefix, 0), "the indent filter")
    return value, args, kwargs


def _wordwrap(
    budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    value, args, kwargs = _words(budget, value, args, kwargs)
    wrapstring = _argument(args, kwargs, 2, "wrapstring")
    size = text_size(value, budget).chars
    joint = len(wrapstring) if isinstance(wrapstring, str) else 1
    budget.allow(size + (size + 1) * joint, "the wordwrap filter")
    return value, args, kwargs


def _urlize(budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
    value, args, kwargs = _words(budget, value, args, kwargs)
    size = text_size(value, budget).chars
    # Each link repeats its URL and adds the markup, `rel` and `target`; words are at least
    # two characters apart.
    extra = sum(
        length_or_zero(_argument(args, kwargs, index, name))
        for index, name in ((2, "target"), (3, "rel"))
    )
    budget.allow(3 * size + (size // 2 + 1) * (40 + extra), "the urlize filter")
    return value, args, kwargs


def _replace(
    budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    text = as_text(value, budget)
    old, new = (
        as_text(_argument(args, kwargs, index, name), budget)
        for index, name in ((0, "old"), (1, "new"))
    )
    count = _argument(args, kwargs, 2, "count")
    size = replaced_size(text, old, new, count if isinstance(count, int) else -1)
    budget.allow(size, "the replace filter")
    return text, args, kwargs


def _format(budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
    template = as_text(value, budget)
    budget.allow(percent_format_size(budget, template, kwargs or args), "the format filter")
    return template, args, kwargs


def _join(budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
    items = list(value)
    budget.step(len(items))
    separator = as_text(_argument(args, kwargs, 0, "d") or "", budget)
    # With an `attribute`, each item's text bounds the text of its attribute.
    size = sum(text_size(item, budget).chars for item in items)
    budget.allow(size + len(separator) * max(len(items) - 1, 0), "the join filter")
    return items, args, kwargs


def _sum(budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
    items = list(value)
    budget.step(len(items))
    by_attribute = _argument(args, kwargs, 0, "attribute") is not None
    # Adding sequences copies the running total each time.
    running = length_or_zero(_argument(args, kwargs, 1, "start"))
    for item in items:
        running += text_size(item, budget).chars if by_attribute else length_or_zero(item)
        budget.spend(running)
    return items, args, kwargs


def _json_size(budget: Budget, value: Any, indent: Any, separators: Any, what: str) -> None:
    size = text_size(value, budget)
    width = len(indent) if isinstance(indent, str) else indent if isinstance(indent, int) else 0
    joints = sum(map(length_or_zero, separators)) if isinstance(separators, tuple | list) else 0
    if width > 0 or joints:
        # An indent starts a line per item, as deep as the item nests; separators repeat.
        per_item = 1 + max(width, 0) * (size.depth + 1) + joints
        budget.allow(size.chars + size.items * per_item, what)


def _tojson(budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
    _json_size(budget, value, _argument(args, kwargs, 0, "indent"), None, "the tojson filter")
    return value, args, kwargs


def hf_tojson_check(
    budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    """The check for HuggingFace's tojson(value, ensure_ascii, indent, separators, sort_keys)."""
    indent = _argument(args, kwargs, 1, "indent")
    separators = _argument(args, kwargs, 2, "separators")
    _json_size(budget, value, indent, separators, "the tojson filter")
    return value, args, kwargs


def _pprint(budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
    size = text_size(value, budget)
    budget.step(size.items)
    budget.allow(size.chars + size.items * (size.depth + 2), "the pprint filter")
    return value, args, kwargs


def _batch(budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
    value, args, kwargs = _per_item(budget, value, args, kwargs)
    linecount = _argument(args, kwargs, 0, "linecount")
    if _argument(args, kwargs, 1, "fill_with") is not None and isinstance(linecount, int):
        budget.allow(linecount, "the batch filter's fill", items=True)
    return value, args, kwargs


def _slice(budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
    value, args, kwargs = _per_item(budget, value, args, kwargs)
    slices = _argument(args, kwargs, 0, "slices")
    if isinstance(slices, int):
        budget.step(max(slices, 0))
        budget.allow(slices, "the slice filter", items=True)
    return value, args, kwargs


def _contains(
    budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    charge_comparison(budget, "in", value, _argument(args, kwargs, 0, "seq"))
    return value, args, kwargs


def _equality(
    budget: Budget, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    charge_comparison(budget, "eq", value, _argument(args, kwargs, 0, "other"))
    return value, args, kwargs


FILTER_CHECKS: Mapping[str, Check] = {
    **dict.fromkeys(
        ["abs", "attr", "count", "d", "default", "filesizeformat", "first", "float", "int"],
        constant_check,
    ),
    **dict.fromkeys(
        ["items", "last", "length", "list", "random", "reverse", "round"], constant_check
    ),
    **dict.fromkeys(["map", "reject", "rejectattr", "select", "selectattr"], _per_item),
    **dict.fromkeys(["dictsort", "groupby", "max", "min", "sort", "unique"], _sorting),
    **dict.fromkeys(["title", "striptags", "wordcount"], _words),
    "batch": _batch,
    "center": _center,
    "format": _format,
    "indent": _indent,
    "join": _join,
    "pprint": _pprint,
    "replace": _replace,
    "slice": _slice,
    "sum": _sum,
    "tojson": _tojson,
    "urlize": _urlize,
    "wordwrap": _wordwrap,
}
"""The check of each built-in filter; a filter not listed has its value sized as text."""

TEST_CHECKS: Mapping[str, Check] = {
    "in": _contains,
    "lower": text_check,
    "upper": text_check,
    **dict.fromkeys(
        ["==", "eq", "equalto", "!=", "ne", "<", "lt", "lessthan", "<=", "le"], _equality
    ),
    **dict.fromkeys([">", "gt", "greaterthan", ">=", "ge"], _equality),
}
"""The check of each built-in test that reads more than a fixed part of its value."""


FILTER_STEPS = 6
"""What a filter or test call costs in steps besides what it reads: the call and its check
take about as long as six template operations."""


def guarded(what: str, function: Callable[..., Any], check: Check) -> Callable[..., Any]:
    """`function` (a filter or test, `what` in errors) charging `check` and its result before
    and after it runs. jinja2's pass_context / pass_environment marks are kept."""
    offset = 1 if hasattr(function, "jinja_pass_arg") else 0

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        budget = current_budget()
        budget.step(FILTER_STEPS)
        if len(args) > offset:
            value, rest, kwargs = check(budget, args[offset], args[offset + 1 :], kwargs)
            args = (*args[:offset], value, *rest)
        result = function(*args, **kwargs)
        charge_result(budget, result, what)
        return result

    return run


def guard_all(
    kind: str, functions: Mapping[str, Any], checks: Mapping[str, Check], default: Check
) -> dict[str, Callable[..., Any]]:
    """Each of `functions` (filters or tests: `kind`) guarded by its check in `checks`, or by
    `default`."""
    return {
        name: guarded(f"the {name} {kind}", function, checks.get(name, default))
        for name, function in functions.items()
    }


def lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    """jinja2's `lipsum` global, refused when it would write too many words."""
    budget = current_budget()
    if all(isinstance(number, int) for number in (n, min, max)):
        words = n * builtins.max(min, max, 0)
        budget.step(builtins.max(words, 0))
        # The longest lorem ipsum word and its space take 16 characters.
        budget.allow(words * 16, "lipsum")
    return generate_lorem_ipsum(n, html, min, max)
