"""Hostile jinja2 templates: each ends in PromptError naming the limit it ran into, quickly and
without taking much memory, whether it is a PromptTemplate, a ChatPromptTemplate part or a
chat template given to render_chat.

The dangerous renders run in one worker subprocess (`python -c` calling `run_worker`), with its
address space capped, so a case the budget failed to stop cannot hang CI or exhaust the
machine: the worker is killed at its timeout and the last case it started is named. The worker
reports, for each case, how it ended, how long it took and how far it raised the peak RSS.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from chainkit.prompts import (
    ChatPromptTemplate,
    PromptError,
    PromptTemplate,
    TemplateLimits,
    render_chat,
)
from chainkit.schema import Message

REPO = Path(__file__).resolve().parents[2]

QUICK = TemplateLimits(max_steps=300_000)
"""Stops a runaway loop ten times sooner than the defaults, to keep the file fast; the
defaults themselves are used wherever the member of the class is the issue's own example."""

SECONDS = 20.0
"""A generous bound for one hostile render, for a loaded machine: the budget stops each within
a second or two, and without it a render runs on for minutes or until the test's timeout."""

RSS_GROWTH_MB = 300
"""The most a hostile render may raise the worker's peak memory."""

RSS_UNITS_PER_MB = 1 << 20 if sys.platform == "darwin" else 1 << 10
"""ru_maxrss is in bytes on macOS, in KiB on Linux."""


def _shared_nest(depth: int, width: int = 1000) -> list[Any]:
    """A list that prints as width ** depth zeros while holding `depth` small lists."""
    nest: list[Any] = [0] * width
    for _ in range(depth - 1):
        nest = [nest] * width
    return nest


def _deep_nest(depth: int) -> list[Any]:
    nest: list[Any] = []
    for _ in range(depth):
        nest = [nest]
    return nest


@dataclass(frozen=True)
class Case:
    template: str
    limit: str | None
    """The TemplateLimits field the render must run into; None for another PromptError."""
    values: Callable[[], dict[str, Any]] = dict
    limits: TemplateLimits | None = QUICK
    entry: str = "prompt"
    """How the template is given: "prompt" (PromptTemplate), "chat part" (a jinja2 part of a
    ChatPromptTemplate) or "chat" (a chat template given to render_chat)."""
    message: str = ""
    """Text the error message must contain, besides the limit."""


_NESTED_LOOPS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
_LOOP = "{% for i in range(100000) %}{% for j in range(100000) %}BODY{% endfor %}{% endfor %}"


def _looped(body: str) -> str:
    return _LOOP.replace("BODY", body)


CASES: dict[str, Case] = {
    # --- work: loops, recursion, re-rendering ------------------------------------------------
    "nested loops (issue's example)": Case(_NESTED_LOOPS, "max_steps", limits=None),
    "nested loops, as a chat template": Case(_NESTED_LOOPS, "max_steps", limits=None, entry="chat"),
    "nested loops, in a ChatPromptTemplate": Case(
        _NESTED_LOOPS, "max_steps", limits=None, entry="chat part"
    ),
    "loop with a filter clause": Case(
        "{% for i in range(100000) %}{% for j in range(100000) if j is odd %}{% endfor %}"
        "{% endfor %}",
        "max_steps",
    ),
    "loop body of many statements": Case(
        _looped("{% set x = i * 2 %}{% if x > 3 %}{% set y = x - 1 %}{% endif %}" * 40),
        "max_steps",
    ),
    "macro fan-out": Case(
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
        "{{ f(60) }}",
        "max_steps",
    ),
    "macro recursing forever": Case(
        "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", None, message="RecursionError"
    ),
    "recursive loop fan-out": Case(
        "{% for x in range(100) recursive %}{% if loop.depth < 8 %}{{ loop(range(100)) }}"
        "{% endif %}{% endfor %}",
        "max_steps",
    ),
    "recursive loop called through a variable": Case(
        "{% for x in range(100) recursive %}{% set outer = loop %}{% for y in [1] %}"
        "{% if outer.depth < 8 %}{{ outer(range(100)) }}{% endif %}{% endfor %}{% endfor %}",
        "max_steps",
    ),
    "call block fan-out": Case(
        "{% macro twice() %}{{ caller() }}{{ caller() }}{% endmacro %}"
        + "{% call twice() %}" * 40
        + "x"
        + "{% endcall %}" * 40,
        "max_steps",
    ),
    "block rendered again and again": Case(
        "{% block b %}" + "{{ 1 }}" * 50 + "{% endblock %}" + _looped("{{ self.b() }}"),
        "max_steps",
    ),
    "filter block in a loop": Case(
        _looped("{% filter upper %}" + "{{ i }}" * 100 + "{% endfilter %}"), "max_steps"
    ),
    "map over a long list in C": Case(
        "{{ ([0] * 5000000) | map('abs') | list | length }}", "max_steps"
    ),
    "lipsum": Case("{{ lipsum(n=10 ** 9) }}", "max_steps"),
    "slice into a billion pieces": Case("{{ [1] | slice(10 ** 9) | list }}", "max_steps"),
    "a huge range": Case("{{ range(10 ** 12) | length }}", None, message="MAX_RANGE"),
    # --- the size of what is built -----------------------------------------------------------
    "center folded at construction (issue's example)": Case(
        "{{ 'x' | center(300000000) }}", "max_length", limits=None
    ),
    "replace amplifying a 1 MB string (issue's example)": Case(
        "{{ s | replace('x', 'y' * 1000) }}",
        "max_length",
        values=lambda: {"s": "x" * 1_000_000},
        limits=None,
    ),
    "str.replace method": Case(
        "{{ s.replace('x', 'y' * 1000) }}", "max_length", values=lambda: {"s": "x" * 1_000_000}
    ),
    "replace of the empty string": Case(
        "{{ s | replace('', 'y' * 100) }}", "max_length", values=lambda: {"s": "x" * 1_000_000}
    ),
    "str.zfill": Case("{{ 'x'.zfill(10 ** 10) }}", "max_length"),
    "str.ljust": Case("{{ 'x'.ljust(10 ** 10) }}", "max_length"),
    "str.center": Case("{{ 'x'.center(10 ** 10, '-') }}", "max_length"),
    "str.expandtabs": Case("{{ ('\\t' * 100000).expandtabs(100000) }}", "max_length"),
    "str.join of a long separator": Case("{{ ('x' * 1000000).join(['a'] * 1000) }}", "max_length"),
    "str.join of long items": Case(
        "{{ ''.join([s] * 100000) }}", "max_length", values=lambda: {"s": "x" * 1000}
    ),
    "str.translate to long text": Case(
        "{{ s.translate({120: 'y' * 1000}) }}", "max_length", values=lambda: {"s": "x" * 100000}
    ),
    "str.format width": Case("{{ '{:>10000000000}'.format(1) }}", "max_length"),
    "str.format nested width": Case("{{ '{:{}}'.format('x', 10 ** 10) }}", "max_length"),
    "str.format precision": Case("{{ '{:.10000000000f}'.format(1.5) }}", "max_length"),
    "str.format_map width": Case("{{ '{a:>10000000000}'.format_map({'a': 1}) }}", "max_length"),
    "str.format of many wide fields": Case("{{ ('{0:>1000000}' * 1000).format(1) }}", "max_chars"),
    "% width": Case("{{ '%10000000000d' % 1 }}", "max_length"),
    "% width from a star": Case("{{ '%*d' % (10 ** 10, 1) }}", "max_length"),
    "% width after a nested mapping key": Case(
        "{{ '%(a(b)c)10000000000s' % {'a(b)c': 1} }}", "max_length"
    ),
    "format filter width": Case("{{ '%10000000000s' | format('x') }}", "max_length"),
    "int.to_bytes": Case("{{ (1).to_bytes(10 ** 10, 'big') }}", "max_length"),
    "string times a number": Case("{{ 'x' * 10 ** 10 }}", "max_length"),
    "list times a number": Case("{{ [0] * 10 ** 10 }}", "max_length"),
    "set doubling a string": Case(
        "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}{{ ns.s | length }}",
        "max_length",
    ),
    "set doubling a list": Case(
        "{% set ns = namespace(l=[0]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}"
        "{% endfor %}{{ ns.l | length }}",
        "max_chars",
    ),
    "set squaring an integer": Case(
        "{% set ns = namespace(n=3) %}{% for i in range(100) %}{% set ns.n = ns.n * ns.n %}"
        "{% endfor %}{{ ns.n % 10 }}",
        "max_int_digits",
    ),
    "power tower": Case("{{ 9 ** (9 ** 9) }}", "max_int_digits"),
    "output of a loop": Case(_looped("x" * 1000), "max_length"),
    "indent with a huge width": Case("{{ ('a\\n' * 100000) | indent(100000) }}", "max_length"),
    "wordwrap with a long wrapstring": Case(
        "{{ ('a ' * 100000) | wordwrap(1, wrapstring='x' * 1000) }}", "max_length"
    ),
    "join filter of long items": Case(
        "{{ ([s] * 100000) | join }}", "max_length", values=lambda: {"s": "x" * 1000}
    ),
    "join filter with a long separator": Case(
        "{{ range(100000) | join('x' * 10000) }}", "max_length"
    ),
    "batch filled to a billion": Case("{{ [1] | batch(10 ** 9, 0) | list }}", "max_length"),
    "tojson with a huge indent": Case(
        "{{ data | tojson(indent=100000) }}",
        "max_length",
        values=lambda: {"data": [[1] * 100] * 100},
    ),
    "tojson with a huge indent, chat template": Case(
        "{{ messages | tojson(indent=10 ** 7) }}", "max_length", entry="chat"
    ),
    "tojson with long separators, chat template": Case(
        "{{ ([0] * 10000) | tojson(separators=('x' * 10000, ':')) }}", "max_length", entry="chat"
    ),
    "strftime_now of a long format": Case(
        "{{ strftime_now('%c' * 1000000) | length }}", "max_length", entry="chat"
    ),
    "pprint of a wide structure": Case(
        "{{ data | pprint }}", "max_chars", values=lambda: {"data": _shared_nest(3)}
    ),
    "urlize with a long target": Case(
        "{{ ('http://example.com ' * 10000) | urlize(target='x' * 10000) }}", "max_length"
    ),
    "sum of lists": Case("{{ ([[0] * 1000] * 10000) | sum(start=[]) | length }}", "max_chars"),
    # --- turning structures into text, comparing and sorting them ----------------------------
    "printing a shared nested list (issue's example)": Case(
        "{% set a = [0] * 1000 %}{% set b = [a] * 1000 %}{% set c = [b] * 1000 %}{{ c }}",
        "max_chars",
        limits=None,
    ),
    "printing a huge structure given as a value": Case(
        "{{ data }}", "max_chars", values=lambda: {"data": _shared_nest(4)}, limits=None
    ),
    "string filter of a huge structure": Case(
        "{{ data | string | length }}", "max_chars", values=lambda: {"data": _shared_nest(4)}
    ),
    "~ of a huge structure": Case(
        "{{ ('' ~ data) | length }}", "max_chars", values=lambda: {"data": _shared_nest(4)}
    ),
    "upper of a huge structure": Case(
        "{{ data | upper }}", "max_chars", values=lambda: {"data": _shared_nest(4)}
    ),
    "tojson of a huge structure": Case(
        "{{ data | tojson }}", "max_chars", values=lambda: {"data": _shared_nest(4)}
    ),
    "% of a huge structure": Case(
        "{{ '%s' % (data,) }}", "max_chars", values=lambda: {"data": _shared_nest(4)}
    ),
    "str.format of a huge structure": Case(
        "{{ '{}'.format(data) }}", "max_chars", values=lambda: {"data": _shared_nest(4)}
    ),
    "join filter of a huge structure": Case(
        "{{ data | join }}", "max_chars", values=lambda: {"data": _shared_nest(4)}
    ),
    "lower test of a huge structure": Case(
        "{{ data is lower }}", "max_chars", values=lambda: {"data": _shared_nest(4)}
    ),
    "namespace holding a huge structure": Case(
        "{% set ns = namespace(x=data) %}{{ ns }}",
        "max_chars",
        values=lambda: {"data": _shared_nest(4)},
    ),
    "comparing equal shared structures": Case(
        "{{ a == b }}", "max_chars", values=lambda: {"a": _shared_nest(4), "b": _shared_nest(4)}
    ),
    "membership of a structure equal to one inside": Case(
        "{{ a in [b] }}", "max_chars", values=lambda: {"a": _shared_nest(4), "b": _shared_nest(4)}
    ),
    "a shared tuple as a dict literal's key": Case(
        "{% set ns = namespace(t=(0,)) %}{% for i in range(64) %}{% set ns.t = (ns.t, ns.t) %}"
        "{% endfor %}{{ {ns.t: 1} | length }}",
        "max_chars",
    ),
    "a shared tuple looked up in a dict": Case(
        "{% set ns = namespace(t=(0,)) %}{% for i in range(64) %}{% set ns.t = (ns.t, ns.t) %}"
        "{% endfor %}{{ {}.get(ns.t) }}|{{ {}[ns.t] is defined }}|{{ ns.t in {} }}",
        "max_chars",
    ),
    "a shared tuple in dict()": Case(
        "{% set ns = namespace(t=(0,)) %}{% for i in range(64) %}{% set ns.t = (ns.t, ns.t) %}"
        "{% endfor %}{{ dict([(ns.t, 1)]) | length }}",
        "max_chars",
    ),
    "loop.changed between equal structures": Case(
        "{% for i in range(10) %}{{ loop.changed(a if i is odd else b) }}{% endfor %}",
        "max_chars",
        values=lambda: {"a": _shared_nest(4), "b": _shared_nest(4)},
    ),
    "a deeply nested list": Case(
        "{{ data }}", None, values=lambda: {"data": _deep_nest(100_000)}, message="Recursion"
    ),
    "a self-containing list": Case(
        "{{ data | tojson }}", None, values=lambda: _cyclic(), message="Circular reference"
    ),
    "searching a long string again and again": Case(
        _looped("{{ 'y' in s }}"), "max_chars", values=lambda: {"s": "x" * 5_000_000}
    ),
    "comparing long strings again and again": Case(
        _looped("{{ s == t }}"),
        "max_chars",
        values=lambda: {"s": "x" * 5_000_000, "t": "x" * 5_000_000},
    ),
    "sorting a long list again and again": Case(
        "{% set l = range(100000) | list %}" + _looped("{{ l | sort | first }}"),
        "max_chars",
        limits=None,
    ),
    "dictsort of a big mapping again and again": Case(
        _looped("{{ (d | dictsort)[0] }}"),
        "max_chars",
        values=lambda: {"d": {str(i): i for i in range(100_000)}},
        limits=None,
    ),
    "unique of a long list again and again": Case(
        _looped("{{ l | unique | first }}"),
        "max_steps",
        values=lambda: {"l": list(range(100_000))},
    ),
    "selectattr over a long list again and again": Case(
        _looped("{{ l | selectattr('real') | first }}"),
        "max_steps",
        values=lambda: {"l": list(range(100_000))},
    ),
    "slicing a long string again and again": Case(
        _looped("{{ s[1:] | length }}"), "max_chars", values=lambda: {"s": "x" * 5_000_000}
    ),
    "str.count on a long string again and again": Case(
        _looped("{{ s.count('y') }}"), "max_chars", values=lambda: {"s": "x" * 5_000_000}
    ),
}


def _cyclic() -> dict[str, Any]:
    data: list[Any] = [1]
    data.append(data)
    return {"data": data}


def render_case(case: Case) -> str:
    values = case.values()
    if case.entry == "chat":
        return render_chat(
            [Message.user("hi")], template=case.template, limits=case.limits, **values
        )
    if case.entry == "chat part":
        prompt = ChatPromptTemplate(
            [("user", case.template)], template_format="jinja2", limits=case.limits
        )
        return prompt.format_messages(**values)[0].content
    return PromptTemplate(case.template, template_format="jinja2", limits=case.limits).format(
        **values
    )


def run_worker() -> None:
    """Renders the cases named on stdin, one JSON line of outcome per case on stdout; names
    each case on stderr before starting it, so a hang can be traced."""
    cap = 3 << 30
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    names = json.loads(sys.stdin.read())
    for name in names:
        print(name, file=sys.stderr, flush=True)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        outcome: dict[str, Any] = {"name": name}
        try:
            outcome["output"] = len(render_case(CASES[name]))
        except PromptError as error:
            outcome.update(error=str(error), limit=error.limit)
        except BaseException as error:
            outcome.update(raised=f"{type(error).__name__}: {error}"[:500])
        outcome["seconds"] = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        outcome["rss_growth_mb"] = (after - before) / RSS_UNITS_PER_MB
        print(json.dumps(outcome), flush=True)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, Any]]:
    names = list(CASES)
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                "from tests.prompts.test_templates_hostile import run_worker; run_worker()",
            ],
            input=json.dumps(names),
            cwd=REPO,
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=100,
        )
    except subprocess.TimeoutExpired as expired:
        started = (
            (expired.stderr or b"").decode()
            if isinstance(expired.stderr, bytes)
            else expired.stderr or ""
        )
        pytest.fail(
            f"the hostile-template worker hung; last case started: {started.splitlines()[-1:]}"
        )
    reported = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    if len(reported) != len(names):
        pytest.fail(
            f"the worker stopped after {len(reported)} of {len(names)} cases "
            f"(exit {result.returncode}); last started: {result.stderr.splitlines()[-1:]}"
        )
    return {outcome["name"]: outcome for outcome in reported}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_template_ends_in_a_prompt_error_quickly_and_in_little_memory(
    name: str, outcomes: dict[str, dict[str, Any]]
) -> None:
    case, outcome = CASES[name], outcomes[name]
    assert "raised" not in outcome, outcome["raised"]
    assert "error" in outcome, f"rendered {outcome['output']} characters instead of failing"
    assert outcome["limit"] == case.limit, outcome["error"]
    if case.limit is not None:
        assert f"TemplateLimits.{case.limit}=" in outcome["error"]
    assert case.message in outcome["error"]
    assert outcome["seconds"] < SECONDS, f"took {outcome['seconds']:.1f} s"
    assert outcome["rss_growth_mb"] < RSS_GROWTH_MB, (
        f"peak RSS grew {outcome['rss_growth_mb']:.0f} MB"
    )


# --- in process: what the budget must not stop, and how it is set --------------------------


def test_nothing_is_computed_when_a_template_is_compiled() -> None:
    from chainkit.prompts._sandbox.environment import chat_environment, environment

    for env in (environment(), chat_environment()):
        for source in (
            "{{ 'x' | center(100000000) }}",
            "{{ 'x' ~ ('y' | center(100000000)) }}",
            "{{ '{:>100000000}'.format(1) }}",
            "{{ 'ab' | replace('a', 'b' * 100000000) }}",
        ):
            started = time.perf_counter()
            code = env.compile(source, raw=True)
            assert len(code) < 10_000, "a constant was folded into the compiled template"
            assert time.perf_counter() - started < SECONDS


def test_a_normal_template_over_thousands_of_items_renders() -> None:
    template = (
        "{% macro row(item) %}{{ item.name | title }}={{ '%05d' | format(item.n) }}{% endmacro %}"
        "{% for item in items if item.n is even %}"
        "{{ row(item) ~ (',' if not loop.last else '') }}"
        "{% endfor %}|{{ items | map(attribute='n') | sum }}|{{ items | length }}"
    )
    items = [{"name": f"item {n}", "n": n} for n in range(5000)]
    rendered = PromptTemplate(template, template_format="jinja2").format(items=items)
    rows, total, count = rendered.split("|")
    assert rows.split(",")[:2] == ["Item 0=00000", "Item 2=00002"]
    assert len(rows.split(",")) == 2500
    assert (total, count) == (str(sum(range(5000))), "5000")


def test_each_rendering_gets_a_fresh_budget() -> None:
    # About 60% of max_steps each time: two renderings would not fit in one budget.
    limits = TemplateLimits(max_steps=100_000)
    prompt = PromptTemplate(
        "{% for i in range(30000) %}{% endfor %}done", template_format="jinja2", limits=limits
    )
    assert [prompt.format(), prompt.format()] == ["done", "done"]


@pytest.mark.parametrize(
    ("template", "tight", "limit"),
    [
        (
            "{% for i in range(300) %}{% for j in range(300) %}{% endfor %}{% endfor %}ok",
            TemplateLimits(max_steps=50_000),
            "max_steps",
        ),
        ("{{ 'x' * 5000 }}", TemplateLimits(max_length=4999), "max_length"),
        ("{{ ('x' * 5000) | length }}", TemplateLimits(max_chars=4999), "max_chars"),
        ("{{ (10 ** 50) % 7 }}", TemplateLimits(max_int_digits=40), "max_int_digits"),
    ],
)
def test_limits_are_adjustable_for_every_entry_point(
    template: str, tight: TemplateLimits, limit: str
) -> None:
    def renderings(limits: TemplateLimits | None) -> list[Callable[[], object]]:
        return [
            lambda: PromptTemplate(template, template_format="jinja2", limits=limits).format(),
            lambda: PromptTemplate.from_template(
                template, template_format="jinja2", limits=limits
            ).format(),
            lambda: ChatPromptTemplate(
                [("user", template)], template_format="jinja2", limits=limits
            ).format_messages(),
            lambda: render_chat([Message.user("hi")], template=template, limits=limits),
        ]

    for render in renderings(None):
        render()
    for render in renderings(tight):
        with pytest.raises(PromptError, match=f"TemplateLimits.{limit}=") as caught:
            render()
        assert caught.value.limit == limit


def test_a_partial_keeps_the_limits() -> None:
    prompt = PromptTemplate(
        "{{ a }}{% for i in range(1000) %}{% endfor %}",
        template_format="jinja2",
        limits=TemplateLimits(max_steps=500),
    )
    with pytest.raises(PromptError, match="max_steps"):
        prompt.partial(a="x").format()


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"max_steps": 0}, ValueError, "TemplateLimits.max_steps must be at least 1, got 0"),
        ({"max_length": -5}, ValueError, "TemplateLimits.max_length must be at least 1, got -5"),
        ({"max_chars": 1.5}, TypeError, "TemplateLimits.max_chars must be an int, got float"),
        ({"max_int_digits": True}, TypeError, "max_int_digits must be an int, got bool"),
        ({"max_steps": "10"}, TypeError, "TemplateLimits.max_steps must be an int, got str"),
    ],
)
def test_bad_limits_are_refused_naming_the_field(
    fields: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        TemplateLimits(**fields)


def test_limits_must_be_template_limits() -> None:
    expected = "limits must be a prompts.TemplateLimits, got dict"
    with pytest.raises(TypeError, match=expected):
        PromptTemplate("{{ a }}", template_format="jinja2", limits={"max_steps": 10})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=expected):
        ChatPromptTemplate([("user", "{a}")], limits={"max_steps": 10})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=expected):
        render_chat([Message.user("hi")], limits={"max_steps": 10})  # type: ignore[arg-type]


def test_instrumented_operations_keep_jinja2s_meaning() -> None:
    template = (
        "{{ a < b < c }}|{{ a < c < b }}|{{ x in l }}|{{ x not in l }}|{{ s == t }}|"
        "{{ a != b }}|{{ s in t }}|{{ s[1:3] }}|{{ l[::-1] }}|{{ l[:1] }}|{{ s ~ a ~ l }}|"
        "{% for i in l recursive %}{{ i }}{% endfor %}|{{ l | join(',') }}|{{ d }}"
    )
    values = {
        "a": 1,
        "b": 2,
        "c": 3,
        "x": "q",
        "l": ["p", "q"],
        "s": "text",
        "t": "text",
        "d": {"k": [1, None]},
    }
    rendered = PromptTemplate(template, template_format="jinja2").format(**values)
    assert rendered.split("|") == [
        "True",
        "False",
        "True",
        "False",
        "True",
        "True",
        "True",
        "ex",
        "['q', 'p']",
        "['p']",
        "text1['p', 'q']",
        "pq",
        "p,q",
        "{'k': [1, None]}",
    ]


def test_the_docs_state_the_default_limits() -> None:
    page = (REPO / "docs" / "limits.md").read_text(encoding="utf-8")
    defaults = TemplateLimits()
    for limit in fields(TemplateLimits):
        value = getattr(defaults, limit.name)
        assert f"| `prompts.TemplateLimits.{limit.name}` | {value:,} |" in page
