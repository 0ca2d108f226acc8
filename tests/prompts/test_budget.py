"""The budget of a jinja2 rendering (chainkit/prompts/_sandbox/budget.py): each counter, each
refusal and each rule of the size walk, checked on its own with the other limits set out of
reach, and the walk's time on values that share one list or string a million times."""

from __future__ import annotations

import json
import math
from collections import Counter, OrderedDict, namedtuple
from typing import Any

import pytest
from markupsafe import Markup

from chainkit.prompts import PromptError, PromptTemplate, TemplateLimits
from chainkit.prompts._sandbox.budget import (
    ITEM_CHARS,
    Budget,
    Size,
    active_budget,
    charge_result,
    current_budget,
    length_or_zero,
    namespace_attributes,
    rendering,
    text_size,
)

HIGH = 10**15
"""Out of reach of every test here: a limit under test is the only one that can trip."""


def limits(**low: int) -> TemplateLimits:
    """Every limit out of reach except those given."""
    fields = dict(max_steps=HIGH, max_chars=HIGH, max_length=HIGH, max_int_digits=HIGH)
    return TemplateLimits(**{**fields, **low})


def size_of(value: object) -> tuple[Size, Budget]:
    budget = Budget(limits())
    return text_size(value, budget), budget


def exceeding(limit: str) -> Any:
    return pytest.raises(PromptError, match=rf"TemplateLimits\.{limit}=")


# --- the counters ------------------------------------------------------------------------------


def test_steps_are_counted_up_to_max_steps_and_refused_past_it() -> None:
    budget = Budget(limits(max_steps=10))
    budget.step()
    budget.step(9)
    assert budget.steps == 10
    with exceeding("max_steps") as caught:
        budget.step()
    assert caught.value.limit == "max_steps"
    assert "max_steps=10: its loops, macros and calls did more work than allowed" in str(
        caught.value
    )
    assert "pass prompts.TemplateLimits with a higher limit" in str(caught.value)


def test_characters_are_counted_up_to_max_chars_and_refused_past_it() -> None:
    budget = Budget(limits(max_chars=100))
    budget.spend(60)
    assert budget.room() == 40
    budget.spend(40)
    assert (budget.chars, budget.room()) == (100, 0)
    with exceeding("max_chars") as caught:
        budget.spend(1)
    assert caught.value.limit == "max_chars"
    assert "built, copied or scanned more characters or items than allowed" in str(caught.value)


def test_allow_refuses_up_front_what_would_be_too_long_without_spending() -> None:
    budget = Budget(limits(max_length=50))
    budget.allow(50, "a thing")
    assert budget.chars == 0
    with pytest.raises(PromptError, match=r"max_length=50: a thing would have 51 characters"):
        budget.allow(51, "a thing")
    with exceeding("max_length") as caught:
        budget.allow(51, "a list", items=True)
    assert caught.value.limit == "max_length"


def test_allow_refuses_up_front_what_would_cost_more_than_is_left() -> None:
    budget = Budget(limits(max_chars=100))
    budget.spend(20)
    budget.allow(80, "a string")
    budget.allow(80 // ITEM_CHARS, "a list", items=True)
    assert budget.chars == 20
    with exceeding("max_chars") as caught:
        budget.allow(81, "a string")
    assert caught.value.limit == "max_chars"
    with exceeding("max_chars"):
        budget.allow(80 // ITEM_CHARS + 1, "a list", items=True)
    assert budget.chars == 20


def test_build_spends_what_allow_lets_through_items_at_their_pointers_cost() -> None:
    budget = Budget(limits(max_chars=100))
    budget.build(30, "a string")
    budget.build(5, "a list", items=True)
    assert budget.chars == 30 + 5 * ITEM_CHARS == 70
    with exceeding("max_chars"):
        budget.build(31, "a string")
    with exceeding("max_chars"):
        budget.build(4, "a list", items=True)  # 32 characters' worth, 30 left
    assert budget.chars == 70


def test_build_refuses_what_is_too_long_naming_it() -> None:
    budget = Budget(limits(max_length=50))
    with pytest.raises(PromptError, match=r"max_length=50: a slice would have 51 characters"):
        budget.build(51, "a slice")
    assert budget.chars == 0


def test_results_are_charged_by_length_items_and_digits() -> None:
    budget = Budget(limits(max_int_digits=3))
    for text in ("abc", b"ab", bytearray(b"a")):
        charge_result(budget, text, "x")
    assert budget.chars == 6
    for container in ([1, 2], (1,), {"a": 1}, {1, 2, 3}, frozenset({1})):
        charge_result(budget, container, "x")
    assert budget.chars == 6 + 8 * ITEM_CHARS
    charge_result(budget, 1.5e300, "x")
    charge_result(budget, 999, "x")
    charge_result(budget, 1023, "x")  # 10 bits: 3 digits are 9.97 bits, rounded up
    assert budget.chars == 6 + 8 * ITEM_CHARS
    with pytest.raises(PromptError, match=r"max_int_digits=3: '\*\*' would build") as caught:
        charge_result(budget, 1024, "**")
    assert caught.value.limit == "max_int_digits"
    with exceeding("max_int_digits"):
        charge_result(budget, -1024, "-")


def test_the_int_bits_follow_the_digits() -> None:
    for digits in (1, 3, 10, 10_000):
        assert Budget(limits(max_int_digits=digits)).int_bits == math.ceil(digits * math.log2(10))


def test_a_result_longer_than_max_length_is_refused() -> None:
    budget = Budget(limits(max_length=3))
    charge_result(budget, "abc", "x")
    with pytest.raises(PromptError, match=r"the join filter would have 4 characters or items"):
        charge_result(budget, "abcd", "the join filter")
    with pytest.raises(PromptError, match=r"the map filter would have 4 characters or items"):
        charge_result(budget, [1, 2, 3, 4], "the map filter")


def test_length_or_zero() -> None:
    assert length_or_zero([1, 2]) == 2
    assert length_or_zero("abc") == 3
    assert length_or_zero(5) == 0
    assert length_or_zero(None) == 0


def test_the_budget_is_the_rendering_s_and_there_is_none_outside_one() -> None:
    # (current_budget's RuntimeError outside a rendering is what keeps jinja2 from folding a
    # bounded operation at compile time: tests/prompts/test_templates_hostile.py checks that.)
    assert active_budget() is None
    try:  # (not pytest.raises: this RuntimeError is for jinja2, never a user, to see)
        current_budget()
    except RuntimeError as refused:
        assert str(refused) == "a bounded template operation ran outside a rendering"
    else:
        pytest.fail("current_budget() outside a rendering returned")
    with rendering(limits(max_steps=7)) as outer:
        assert current_budget() is outer is active_budget()
        assert outer.max_steps == 7 and outer.steps == 0
        with rendering(limits()) as inner:
            assert current_budget() is inner
        assert current_budget() is outer
    assert active_budget() is None


# --- the size of a value -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("leaf", "chars"),
    [
        ("ab", 2 * 2 + 2),  # repr may escape each character with one more: 'a\\'
        ("", 2),
        (Markup("ab"), 2 * 2 + 2 + 48),  # a subclass may print its name too: Markup('ab')
        ("a\x00", 10 * 2 + 2),  # an unprintable character may take ten: \U0001f600
        (0, 2),
        (255, 8 * 31 // 100 + 2),
        (10**100, 333 * 31 // 100 + 2),
        (-(10**100), 333 * 31 // 100 + 2),
        (b"ab", 4 * 2 + 3),  # b'\xff\xff'
        (bytearray(b"abc"), 4 * 3 + 14),  # bytearray(b'...')
        (True, 5),  # True, or JSON's true
        (False, 5),
        (1.5, 3),  # anything else: its repr
        (-1.2345678901234567e-308, 24),
        (None, 4),
    ],
)
def test_each_kind_of_leaf_has_its_size(leaf: object, chars: int) -> None:
    size, budget = size_of([leaf])
    assert size == Size(2 + 2 + chars, 1, 1)  # the brackets and a separator
    assert budget.chars == size.chars
    assert budget.steps == 1


def test_a_string_printed_as_itself_is_its_length_and_charged_nothing_here() -> None:
    size, budget = size_of("abc\x00")
    assert size == Size(4, 0, 0)
    assert (budget.chars, budget.steps) == (0, 0)


def test_a_leaf_alone_is_charged_its_size() -> None:
    size, budget = size_of(10**100)
    assert size == Size(105, 0, 0)
    assert (budget.chars, budget.steps) == (105, 0)


Pair = namedtuple("Pair", "a b")


@pytest.mark.parametrize(
    ("container", "overhead"),
    [
        ([1, 2, 3], 2 + 2 * 3),
        ((1, 2, 3), 2 + 2 * 3),
        ({1: 2, 3: 4}, 2 + 2 * 4),  # a dict's keys and values are its items: ": " and ", "
        ({1, 2, 3}, 24 + 16 * 3),  # {1, 2, 3}, but set() when empty
        (frozenset({1, 2, 3}), 24 + 16 * 3),
        ({1: 2, 3: 4, 5: 6}.keys(), 24 + 16 * 3),
        ({1: 2, 3: 4, 5: 6}.values(), 24 + 16 * 3),
        (Pair(1, 2), 24 + 16 * 2),  # Pair(a=1, b=2)
        (OrderedDict({1: 2}), 24 + 16 * 2),  # OrderedDict([(1, 2)])
    ],
)
def test_each_kind_of_container_has_its_overhead(container: Any, overhead: int) -> None:
    size, budget = size_of(container)
    count = len(container) * (2 if isinstance(container, dict) else 1)
    assert size == Size(overhead + 2 * count, count, 1)  # each item a one-digit int: 2
    assert budget.steps == count


def test_dict_items_are_pairs_inside_the_view() -> None:
    size, _ = size_of({1: 2}.items())
    pair = 2 + 2 * 2 + 2 * 2
    assert size == Size(24 + 16 * 1 + pair, 1 + 2, 2)


def test_a_big_dict_is_sized_as_a_large_positive_number() -> None:
    big = {f"k{n}": n for n in range(10_000)}
    size, budget = size_of(big)
    assert size.chars >= len(repr(big)) > 100_000
    assert size.items == 20_000 and budget.steps == 20_000


def test_nesting_adds_up_and_deepens() -> None:
    size, budget = size_of([[1], [[1, 2]]])
    one = 2 + 2 + 2
    pair = 2 + 4 + 4
    assert size == Size(2 + 4 + one + (2 + 2 + pair), 2 + 1 + 1 + 2, 3)
    assert budget.steps == 2 + 1 + 1 + 2


def test_a_shared_container_counts_as_often_as_it_appears_but_is_read_once() -> None:
    inner = [1, 2, 3, 4, 5]
    shared, budget = size_of([inner] * 3)
    distinct, _ = size_of([[1, 2, 3, 4, 5] for _ in range(3)])
    assert shared == distinct == Size(2 + 6 + 3 * (2 + 10 + 10), 3 + 3 * 5, 2)
    assert budget.steps == 3 + 5


def test_a_shared_leaf_counts_as_often_as_it_appears() -> None:
    text = "ab\x00"
    size, _ = size_of([text, 7, text, text])
    assert size == Size(2 + 8 + 3 * (10 * 3 + 2) + 2, 4, 1)


class ScanCountingText(str):
    """A string (as markupsafe.Markup is one) that counts the scans of its characters."""

    scans = 0

    def isprintable(self) -> bool:
        self.scans += 1
        return super().isprintable()


def test_a_string_a_container_holds_many_times_is_scanned_once() -> None:
    text = ScanCountingText("ab\x00")
    size, _ = size_of([text] * 1000)
    assert size == Size(2 + 2 * 1000 + 1000 * (10 * 3 + 2 + 48), 1000, 1)
    assert text.scans == 1


class Document:
    """An object a template's owner passes in (say, a retrieved page), printed in full."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.reprs = 0

    def __repr__(self) -> str:
        self.reprs += 1
        return f"Document({self.text!r})"


def test_an_object_of_another_type_is_its_repr_read_once() -> None:
    document = Document("x" * 1000)
    size, _ = size_of([document] * 3)
    assert size == Size(2 + 2 * 3 + 3 * (1000 + 12), 3, 1)
    assert document.reprs == 1


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


def test_an_object_that_refuses_repr_is_still_tested_by_a_template() -> None:
    # Sizing an `in` test must not fail where the test itself works.
    template = PromptTemplate(
        "{{ 'found' if thing in things else 'missing' }}", template_format="jinja2"
    )
    thing = Unprintable()
    assert template.format(thing=thing, things=[Unprintable(), thing]) == "found"


def test_an_object_given_to_a_template_and_shared_many_times_is_refused_at_once() -> None:
    # It once counted as 48 characters however long it printed: a list of 10_000 references
    # to a page of 10_000 characters was refused only once its 100_000_000 were built.
    template = PromptTemplate("{{ [page] * 10000 }}", template_format="jinja2")
    with exceeding("max_chars") as caught:
        template.format(page=Document("x" * 10_000))
    assert caught.value.limit == "max_chars"


def test_a_container_met_again_before_its_turn_is_read_once() -> None:
    # The root stacks `inner` and `outer`; `outer` is read first and stacks `inner` again.
    inner = [1, 2, 3]
    outer = [inner]
    size, budget = size_of([inner, outer])
    inner_chars = 2 + 2 * 3 + 3 * 2
    assert size == Size(2 + 4 + inner_chars + (2 + 2 + inner_chars), 2 + 1 + 2 * 3, 3)
    assert budget.steps == 2 + 1 + 3


def test_a_container_inside_itself_counts_as_its_ellipsis() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    size, budget = size_of(loop)
    assert size == Size(2 + 4 + 2 + 5, 2, 1)  # [1, [...]]
    assert budget.steps == 2
    assert text_size(loop, Budget(limits(max_steps=2))) == size  # read once, not round again
    outer = {"a": loop, "b": loop}
    size, budget = size_of(outer)
    assert size == Size(2 + 8 + 4 + 4 + 2 * 13, 4 + 2 * 2, 2)
    assert budget.steps == 4 + 2


def test_a_namespace_prints_its_attributes() -> None:
    from jinja2.utils import Namespace

    space = Namespace(a=1)
    assert namespace_attributes(space) == {"a": 1}
    size, _ = size_of(space)
    attributes = 2 + 4 + (2 * 1 + 2) + 2
    assert size == Size(24 + 16 + attributes, 1 + 2, 2)


def test_only_a_jinja2_namespace_has_namespace_attributes() -> None:
    class Namespace:
        pass

    class OddNamespace:
        pass

    class Lookalike:
        pass

    odd = OddNamespace()
    OddNamespace.__name__ = "Namespace"
    object.__setattr__(odd, "_Namespace__attrs", ["not", "a", "dict"])
    lookalike = Lookalike()
    object.__setattr__(lookalike, "_Namespace__attrs", {"a": 1})
    assert namespace_attributes(Namespace()) is None
    assert namespace_attributes(odd) is None
    assert namespace_attributes(lookalike) is None
    assert namespace_attributes({"a": 1}) is None
    plain = Namespace()
    assert size_of([plain])[0] == Size(2 + 2 + len(repr(plain)), 1, 1)


SAMPLES: list[object] = [
    ["it's", 'say "hi"', "back\\slash", "tab\there", "é", "😀", "\x00\x1f\u200b"],
    [10**50, -(10**50), 0, -1, 2**64],
    [False, True, 0, False],
    [Markup(""), Markup("<b>")] * 5,
    [OrderedDict({1: 2}), Counter("ab"), OrderedDict()] * 5,
    {"nested": {"list": [1, [2, [3, []]]], "text": "a\nb"}, "n": None, "f": 1.25e-300},
    [b"\xff\x00", bytearray(b"\\'")],
    ({1, 2}, frozenset({"a"}), ()),
    {str(n): [n] * n for n in range(50)},
    [[["x" * 10] * 10] * 10] * 3,
]


@pytest.mark.parametrize("value", SAMPLES, ids=range(len(SAMPLES)))
def test_the_size_bounds_str_repr_and_json(value: object) -> None:
    size, _ = size_of(value)
    assert size.chars >= len(str(value))
    assert size.chars >= len(repr(value))
    try:
        text = json.dumps(value, ensure_ascii=False)
    except TypeError:
        return
    assert size.chars >= len(text)


# --- refusals of the walk ----------------------------------------------------------------------


def test_a_value_is_refused_exactly_past_the_room_left() -> None:
    value = [["ab"] * 10, 10**100]
    size, _ = size_of(value)
    for spent_before in (0, 7):
        fits = Budget(limits(max_chars=size.chars + spent_before))
        fits.spend(spent_before)
        assert text_size(value, fits) == size
        assert fits.chars == size.chars + spent_before
        short = Budget(limits(max_chars=size.chars + spent_before - 1))
        short.spend(spent_before)
        with exceeding("max_chars") as caught:
            text_size(value, short)
        assert caught.value.limit == "max_chars"
        assert short.chars == spent_before


def test_a_leaf_is_refused_past_the_room_left_with_nothing_spent() -> None:
    assert text_size(10**100, Budget(limits(max_chars=105))) == Size(105, 0, 0)
    short = Budget(limits(max_chars=104))
    with exceeding("max_chars"):
        text_size(10**100, short)
    assert short.chars == 0


def test_each_item_read_is_a_step() -> None:
    value = [list(range(10)), {"a": 1}]
    text_size(value, Budget(limits(max_steps=2 + 10 + 2)))
    with exceeding("max_steps"):
        text_size(value, Budget(limits(max_steps=2 + 10 + 1)))


WIDELY_SHARED = [
    "{{ [[1] * 1000000] * 1000000 }}",
    "{{ ['x' * 1000000] * 1000000 }}",
    "{{ [['x' * 1000000]] * 1000000 }}",
    "{{ ([[1] * 1000000] * 1000000) | tojson }}",
    "{{ ([[1] * 1000000] * 1000000) | sort }}",
    "{{ ['x' * 1000000] * 1000000 ~ 'y' }}",
    "{{ ([[['x' * 100] * 1000] * 1000]) | join }}",
]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("template", WIDELY_SHARED)
def test_a_value_sharing_one_list_or_string_a_million_times_is_refused_at_once(
    template: str,
) -> None:
    # Each shared reference once cost a copy of the list, or a scan of the string, it holds:
    # a million times a million.
    with exceeding("max_chars") as caught:
        PromptTemplate(template, template_format="jinja2").format()
    assert caught.value.limit == "max_chars"


@pytest.mark.timeout(20)
def test_a_widely_shared_value_given_to_a_template_is_refused_at_once() -> None:
    shared = [[1] * 1_000_000] * 1_000_000
    with exceeding("max_chars"):
        PromptTemplate("{{ x }}", template_format="jinja2").format(x=shared)
    with exceeding("max_chars"):
        PromptTemplate("{{ x | tojson }}", template_format="jinja2").format(x=[shared])
