"""Tests for chainkit.prompts: templates, chat prompts, placeholders and their safety rules."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from chainkit import prompts
from chainkit.prompts import (
    BasePromptTemplate,
    ChatPromptTemplate,
    MessagesPlaceholder,
    PromptError,
    PromptTemplate,
)
from chainkit.prompts.template import TemplateFormat
from chainkit.schema import Message

REPO = Path(__file__).resolve().parents[2]

UNSAFE_FIELDS = [
    "{x.__class__}",
    "{x.__class__.__init__.__globals__}",
    "{x[0]}",
    "{x[secret]}",
    "{0}",
    "{}",
    "{x!r}",
    "{x!s}",
    "{x:>10}",
    "{x:{y}}",
    "{ x }",
    "{x-y}",
]


# --- PromptTemplate, f-string -----------------------------------------------------------


def test_format_fills_fields_with_str_of_values() -> None:
    prompt = PromptTemplate("Hi {name}, you are {age}.")
    assert prompt.format(name="Ada", age=36) == "Hi Ada, you are 36."


def test_input_variables_are_inferred_in_first_appearance_order_without_repeats() -> None:
    prompt = PromptTemplate("{b} {a} {b} {c} {a}")
    assert prompt.input_variables == ["b", "a", "c"]


def test_explicit_input_variables_are_kept_in_their_order() -> None:
    prompt = PromptTemplate("{a} {b} {c}", input_variables=["c", "a", "b", "a"])
    assert prompt.input_variables == ["c", "a", "b"]
    partly = PromptTemplate("{a} {b}", input_variables=["b", "a"], partial_variables={"a": 1})
    assert partly.input_variables == ["b"]
    assert partly.format(b=2) == "1 2"


@pytest.mark.parametrize(
    ("template", "declared", "template_format", "message", "variable"),
    [
        (
            "Hello {name}",
            ["nme"],
            "f-string",
            "the template uses ['name'], which input_variables leaves out; "
            "input_variables names ['nme'], which the template does not use",
            "name",
        ),
        ("Hello {name}", [], "f-string", "the template uses ['name']", "name"),
        ("{a}", ["a", "extra"], "f-string", "input_variables names ['extra'], which", "extra"),
        ("{{ a }}", ["a", "b"], "jinja2", "input_variables names ['b'], which", "b"),
    ],
)
def test_explicit_input_variables_must_match_the_template(
    template: str, declared: list[str], template_format: TemplateFormat, message: str, variable: str
) -> None:
    with pytest.raises(PromptError, match=re.escape(message)) as caught:
        PromptTemplate(template, input_variables=declared, template_format=template_format)
    assert str(caught.value).startswith("input_variables do not match the template: ")
    assert caught.value.variable == variable


def test_inferred_input_variables_exclude_partials() -> None:
    prompt = PromptTemplate("{a} {b}", partial_variables={"a": "1"})
    assert prompt.input_variables == ["b"]
    assert prompt.format(b="2") == "1 2"


def test_extra_values_are_ignored() -> None:
    assert PromptTemplate("{a}").format(a="x", unused="y") == "x"


def test_missing_variable_raises_prompt_error_naming_it() -> None:
    prompt = PromptTemplate("{first} {second}")
    with pytest.raises(PromptError, match="'second'") as caught:
        prompt.format(first="1")
    assert caught.value.variable == "second"
    assert isinstance(caught.value, ValueError)


def test_doubled_braces_are_literal_braces() -> None:
    prompt = PromptTemplate('{{"answer": {{value}}}} {{{x}}}')
    assert prompt.input_variables == ["x"]
    assert prompt.format(x=1) == '{"answer": {value}} {1}'


def test_percent_signs_and_template_without_fields_are_literal() -> None:
    assert PromptTemplate("100% sure").format() == "100% sure"
    assert PromptTemplate("").format(a=1) == ""


@pytest.mark.parametrize("field", UNSAFE_FIELDS)
def test_unsafe_fields_are_rejected_when_built(field: str) -> None:
    with pytest.raises(PromptError) as caught:
        PromptTemplate(f"before {field} after")
    rejected = caught.value.field
    assert rejected is not None
    assert field.startswith(rejected)
    assert repr(rejected) in str(caught.value)


@pytest.mark.parametrize("template", ["a } b", "a { b", "{x", "x}", "{x}}", "{{x}"])
def test_unbalanced_single_braces_are_rejected(template: str) -> None:
    with pytest.raises(PromptError, match="single"):
        PromptTemplate(template)


@pytest.mark.parametrize("field", UNSAFE_FIELDS)
def test_unsafe_template_assigned_after_construction_is_rejected_at_format(field: str) -> None:
    prompt = PromptTemplate("{x}")
    prompt.template = field
    with pytest.raises(PromptError, match="not allowed"):
        prompt.format(x="value", y="1")
    with pytest.raises(PromptError, match="not allowed"):
        prompt.format_messages(x="value", y="1")


def test_template_built_without_init_is_validated_at_format() -> None:
    prompt = PromptTemplate.__new__(PromptTemplate)
    prompt.template = "{x.__class__.__mro__}"
    prompt.template_format = "f-string"
    prompt.partial_variables = {}
    prompt.input_variables = ["x"]
    with pytest.raises(PromptError, match="not allowed"):
        prompt.format(x="value")


def test_reassigned_valid_template_is_used_at_next_format() -> None:
    prompt = PromptTemplate("old {x}")
    # Equal text in a new string object must still work after recompiling.
    prompt.template = "".join(["new ", "{x}"])
    assert prompt.format(x=1) == "new 1"
    prompt.template = "{y}"
    with pytest.raises(PromptError) as caught:
        prompt.format(x=1)
    assert caught.value.variable == "y"


def test_reassigned_template_format_is_honoured() -> None:
    prompt = PromptTemplate("{{ x }}")
    assert prompt.format() == "{ x }"
    prompt.template_format = "jinja2"
    assert prompt.format(x=5) == "5"


def test_reassigned_template_or_format_is_used_with_text_partials() -> None:
    # Text partials are written into the compiled template and kept: a new template or
    # format must not be read from that copy.
    prompt = PromptTemplate("old {a} {x}", partial_variables={"a": "A"})
    assert prompt.format(x=1) == "old A 1"
    prompt.template = "".join(["new {a} ", "{x}"])
    assert prompt.format(x=2) == "new A 2"
    prompt.template = "{{ a }} {{ x }}"
    assert prompt.format(x=3) == "{ a } { x }"
    prompt.template_format = "jinja2"
    assert prompt.format(x=4) == "A 4"


def test_unknown_template_format_is_rejected() -> None:
    with pytest.raises(PromptError, match="mustache"):
        PromptTemplate("{x}", template_format="mustache")  # type: ignore[arg-type]


def test_format_messages_is_one_user_message() -> None:
    assert PromptTemplate("say {w}").format_messages(w="hi") == [Message.user("say hi")]


def test_from_template_infers_variables_and_takes_partials() -> None:
    prompt = PromptTemplate.from_template("{a}{b}", partial_variables={"b": "!"})
    assert prompt.input_variables == ["a"]
    assert prompt.format(a="x") == "x!"


def test_partial_returns_new_template_and_leaves_original_alone() -> None:
    prompt = PromptTemplate("{a} {b} {c}")
    partial = prompt.partial(a="1")
    assert partial.input_variables == ["b", "c"]
    assert partial.format(b="2", c="3") == "1 2 3"
    assert prompt.input_variables == ["a", "b", "c"]
    assert prompt.partial_variables == {}
    with pytest.raises(PromptError):
        prompt.format(b="2", c="3")
    assert partial.partial(b="2").format(c="3") == "1 2 3"


def test_callable_partial_is_evaluated_on_every_format() -> None:
    counter = itertools.count(1)
    prompt = PromptTemplate("call {n}").partial(n=lambda: next(counter))
    assert prompt.format() == "call 1"
    assert prompt.format() == "call 2"


def test_given_value_overrides_partial_without_calling_it() -> None:
    calls: list[str] = []

    def lazy() -> str:
        calls.append("called")
        return "lazy"

    prompt = PromptTemplate("{d}", partial_variables={"d": lazy})
    assert prompt.format(d="given") == "given"
    assert calls == []
    assert prompt.format() == "lazy"
    assert calls == ["called"]


def test_partial_values_changed_after_a_format_are_used_by_the_next() -> None:
    # Text partials are written into the compiled template once; any change must undo that.
    items = ["one"]
    prompt = PromptTemplate("{a} {b} {c}", partial_variables={"a": "x", "c": "{b}"})
    assert prompt.format(b=1) == "x 1 {b}"
    assert prompt.format(a="given", b=1) == "given 1 {b}"
    prompt.partial_variables["a"] = "y"
    assert prompt.format(b=2) == "y 2 {b}"
    prompt.partial_variables["a"] = items
    assert prompt.format(b=3) == "['one'] 3 {b}"
    items.append("two")
    assert prompt.format(b=4) == "['one', 'two'] 4 {b}"
    prompt.partial_variables = {"a": "z", "c": "}}"}
    assert prompt.format(b=5) == "z 5 }}"
    del prompt.partial_variables["c"]
    with pytest.raises(PromptError, match="'c'"):
        prompt.format(b=6)


@given(
    st.text(alphabet="ab_{}% 0.!:", max_size=40),
    st.dictionaries(st.sampled_from(["a", "b", "ab", "_"]), st.text("ab{} ", max_size=5)),
)
@example("{a0}", {})
@example("{a0}", {"a": "{a0}"})
def test_text_partials_format_as_if_given_with_the_values(
    template: str, partials: dict[str, str]
) -> None:
    values = {"a": "A", "b": 2, "ab": "<ab>", "_": "U", "a_": 3.5, "b_": "B_"}
    try:
        prompt = PromptTemplate(template, partial_variables=partials)
    except PromptError:
        return
    given_values = {k: v for k, v in values.items() if k not in partials}
    if not set(PromptTemplate(template).input_variables) <= {**values, **partials}.keys():
        with pytest.raises(PromptError, match="missing"):
            prompt.format(**given_values)
        return
    expected = PromptTemplate(template).format(**{**values, **partials})
    assert prompt.format(**given_values) == expected
    assert prompt.format(**given_values) == expected  # once written in, as at first


@given(st.text(alphabet="ab_{}% 0.!:", max_size=40))
def test_accepted_templates_format_exactly_like_str_format(template: str) -> None:
    values = {"a": "A", "b": 2, "ab": "<ab>", "_": "U", "a_": 3.5, "b_": "B_"}
    try:
        prompt = PromptTemplate(template)
    except PromptError:
        return
    if set(prompt.input_variables) <= values.keys():
        assert prompt.format(**values) == template.format(**values)
    else:
        with pytest.raises(PromptError):
            prompt.format(**values)


def test_scanner_handles_huge_brace_runs() -> None:
    assert PromptTemplate("{{" * 50_000).format() == "{" * 50_000
    assert PromptTemplate("}}" * 50_000).format() == "}" * 50_000
    assert PromptTemplate("{a}" * 50_000).format(a="z") == "z" * 50_000
    with pytest.raises(PromptError, match="never closed"):
        PromptTemplate("{" * 100_001)


# --- PromptTemplate, jinja2 -------------------------------------------------------------


def test_jinja2_template_renders_and_infers_variables_in_order() -> None:
    prompt = PromptTemplate(
        "{{ b }} {% for item in items %}{{ item }},{% endfor %} {{ a | upper }} {{ b }}\n",
        template_format="jinja2",
    )
    assert prompt.input_variables == ["b", "items", "a"]
    assert prompt.format(a="x", b="<b>", items=[1, 2]) == "<b> 1,2, X <b>\n"


def test_jinja2_missing_variable_raises_prompt_error_naming_it() -> None:
    prompt = PromptTemplate("{{ present }} {{ absent }}", template_format="jinja2")
    with pytest.raises(PromptError, match="'absent'") as caught:
        prompt.format(present=1)
    assert caught.value.variable == "absent"


def test_jinja2_undefined_attribute_is_an_error_not_empty_text() -> None:
    prompt = PromptTemplate("{{ user.name }}", template_format="jinja2")
    with pytest.raises(PromptError, match="name"):
        prompt.format(user={})


def test_jinja2_default_filter_allows_optional_variables() -> None:
    prompt = PromptTemplate("{{ tone | default('plain') }}", template_format="jinja2")
    assert prompt.format() == "plain"
    assert prompt.format(tone="warm") == "warm"


@pytest.mark.parametrize(
    "template",
    [
        "{{ x.__class__.__mro__ }}",
        "{{ ''.__class__.__subclasses__() }}",
        "{{ x.__class__ }}",
        "{{ cycler.__init__.__globals__ }}",
    ],
)
def test_jinja2_sandbox_escape_raises_prompt_error(template: str) -> None:
    prompt = PromptTemplate(template, template_format="jinja2")
    with pytest.raises(PromptError, match="sandbox"):
        prompt.format(x="text")


def test_jinja2_syntax_error_is_prompt_error_naming_the_line() -> None:
    with pytest.raises(PromptError, match="broken") as caught:
        PromptTemplate("fine\n{{ broken ", template_format="jinja2")
    assert caught.value.field == "{{ broken "


def test_jinja2_partials_work_like_f_string_partials() -> None:
    counter = itertools.count(1)
    prompt = PromptTemplate("{{ a }}-{{ n }}", template_format="jinja2").partial(
        n=lambda: next(counter)
    )
    assert prompt.input_variables == ["a"]
    assert [prompt.format(a="x"), prompt.format(a="y")] == ["x-1", "y-2"]


def test_jinja2_environment_is_shared_sandboxed_and_strict() -> None:
    import jinja2
    import jinja2.sandbox

    from chainkit.prompts._sandbox.environment import environment

    env = environment()
    assert env is environment()
    assert isinstance(env, jinja2.sandbox.ImmutableSandboxedEnvironment)
    assert env.undefined is jinja2.StrictUndefined
    assert env.autoescape is False
    assert env.keep_trailing_newline is True


def test_text_and_chat_templates_share_one_sandbox_policy() -> None:
    from chainkit.prompts._sandbox.environment import Sandbox, chat_environment, environment

    assert type(environment()) is type(chat_environment()) is Sandbox


@pytest.mark.parametrize(
    "template",
    [
        # The stock sandbox answers False here, letting a template probe what is blocked.
        "{{ x.__class__ is defined }}",
        "{{ x.__class__ | default('hidden') }}",
        # ...and lets a template change the values it was given.
        "{% set _ = items.append(4) %}{{ items }}",
        "{% set _ = table.update(k=2) %}{{ table }}",
    ],
)
def test_jinja2_unsafe_access_and_mutation_raise(template: str) -> None:
    items, table = [1, 2, 3], {"k": 1}
    prompt = PromptTemplate(template, template_format="jinja2")
    with pytest.raises(PromptError, match="sandbox blocked unsafe access"):
        prompt.format(x="text", items=items, table=table)
    assert (items, table) == ([1, 2, 3], {"k": 1})


@pytest.mark.parametrize(
    ("template", "limit"),
    [
        ("{{ 'a' * 10**8 }}", "max_length"),
        ("{{ 10**8 * 'a' }}", "max_length"),
        ("{% set x = 'a' * 300000000 %}done", "max_length"),
        ("{{ [0] * 10**8 }}", "max_length"),
        ("{{ ('ab' * 4000001) | length }}", "max_length"),
        (
            "{% set ns = namespace(s='ab') %}{% for _ in range(40) %}"
            "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}",
            "max_length",
        ),
        ("{{ 3 ** 10000000 }}", "max_int_digits"),
        ("{{ 2 ** (10 ** 400) }}", "max_int_digits"),
        ("{{ (-10) ** 10001 }}", "max_int_digits"),
        ("{{ (10 ** 9000) * (10 ** 9000) }}", "max_int_digits"),
        (
            "{% set ns = namespace(n=3) %}{% for _ in range(40) %}"
            "{% set ns.n = ns.n * ns.n %}{% endfor %}{{ ns.n % 10 }}",
            "max_int_digits",
        ),
    ],
)
def test_jinja2_results_over_the_limits_are_refused_naming_the_limit(
    template: str, limit: str
) -> None:
    prompt = PromptTemplate(template, template_format="jinja2")
    with pytest.raises(PromptError, match=f"template exceeded TemplateLimits.{limit}=") as caught:
        prompt.format()
    assert caught.value.limit == limit


def test_jinja2_range_keeps_the_sandbox_cap() -> None:
    prompt = PromptTemplate("{{ range(10**9) | length }}", template_format="jinja2")
    with pytest.raises(PromptError, match="MAX_RANGE \\(100000\\)"):
        prompt.format()


def test_jinja2_results_within_the_sandbox_bounds_render() -> None:
    def render(template: str) -> str:
        return PromptTemplate(template, template_format="jinja2").format()

    assert (
        render("{{ 'ab' * 3 }}|{{ 2 * [1] }}|{{ 'a' + 'b' }}|{{ 2 ** 10 }}")
        == "ababab|[1, 1]|ab|1024"
    )
    assert render("{{ ('ab' * 4000000) | length }}") == "8000000"
    assert render("{{ (10 ** 9999) % 7 }}") == str(10**9999 % 7)
    assert render("{{ (2 ** 33000).bit_length() }}|{{ 2 ** -2 }}") == "33001|0.25"
    assert render("{{ (-1) ** (10 ** 400) }}|{{ 0 ** (10 ** 400) }}") == "1|0"


@pytest.mark.parametrize(
    ("template", "values", "message"),
    [
        ("{{ 1/0 }}", {}, "at line 1: ZeroDivisionError: division by zero"),
        (
            "ok\n{{ x + 1 }}",
            {"x": "s"},
            'at line 2: TypeError: can only concatenate str (not "int") to str',
        ),
        ("{{ 'a,b'.split('') }}", {}, "at line 1: ValueError: empty separator"),
        (
            "{{ 10.0 ** 400 }}",
            {},
            "at line 1: OverflowError: (34, 'Numerical result out of range')",
        ),
        (
            "{{ f() }}",
            {"f": lambda: int("x")},
            "at line 1: ValueError: invalid literal for int() with base 10: 'x'",
        ),
    ],
)
def test_jinja2_errors_while_rendering_become_prompt_errors(
    template: str, values: dict[str, object], message: str
) -> None:
    prompt = PromptTemplate(template, template_format="jinja2")
    with pytest.raises(PromptError) as caught:
        prompt.format(**values)
    assert str(caught.value) == f"jinja2 template failed {message}"


def test_jinja2_prompt_errors_pass_through_unchanged() -> None:
    def refuse() -> str:
        raise PromptError("refused by the value itself")

    prompt = PromptTemplate("{{ f() }}", template_format="jinja2")
    with pytest.raises(PromptError, match=r"^refused by the value itself$"):
        prompt.format(f=refuse)


@pytest.mark.parametrize(
    "template",
    [
        "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}",
        "{% if 1 %}" * 3000 + "{% endif %}" * 3000,
    ],
)
def test_jinja2_absurdly_nested_template_is_a_prompt_error(template: str) -> None:
    with pytest.raises(PromptError, match="invalid jinja2 template: RecursionError"):
        PromptTemplate(template, template_format="jinja2")


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_import_does_not_load_jinja2() -> None:
    result = _run_python(
        "import chainkit.prompts, sys; assert 'jinja2' not in sys.modules\n"
        "from chainkit.prompts import ChatPromptTemplate, PromptTemplate\n"
        "PromptTemplate('{x}').format(x=1)\n"
        "ChatPromptTemplate([('user', '{x}')]).format_messages(x=1)\n"
        "assert 'jinja2' not in sys.modules\n"
        "PromptTemplate('{{ x }}', template_format='jinja2')\n"
        "assert 'jinja2' in sys.modules"
    )
    assert result.returncode == 0, result.stderr


# --- MessagesPlaceholder ----------------------------------------------------------------


def test_placeholder_expands_to_given_messages() -> None:
    history = [Message.user("hi"), Message.assistant("hello")]
    assert MessagesPlaceholder("history").messages({"history": history}) == history


def test_required_placeholder_missing_raises_naming_it() -> None:
    with pytest.raises(PromptError, match="'history'") as caught:
        MessagesPlaceholder("history").messages({})
    assert caught.value.variable == "history"


def test_optional_placeholder_missing_expands_to_nothing() -> None:
    assert MessagesPlaceholder("history", optional=True).messages({}) == []


@pytest.mark.parametrize(
    ("value", "described"),
    [
        ("hi", "got str"),
        ({"history": []}, "got dict"),
        ([Message.user("x"), "hi"], r"\[1\] is a str"),
    ],
)
def test_placeholder_value_that_is_not_a_list_of_messages_is_rejected(
    value: object, described: str
) -> None:
    for optional in (False, True):
        with pytest.raises(PromptError, match=described) as caught:
            MessagesPlaceholder("history", optional=optional).messages({"history": value})
        assert caught.value.variable == "history"
        assert "'history'" in str(caught.value)


# --- ChatPromptTemplate -----------------------------------------------------------------


def test_chat_prompt_formats_each_kind_of_entry_in_order() -> None:
    fixed = Message.system("fixed rules")
    prompt = ChatPromptTemplate(
        [
            ("system", "You help with {topic}."),
            fixed,
            MessagesPlaceholder("history"),
            ("human", "{question}"),
            ("ai", "Thinking about {topic}"),
            ("user", PromptTemplate("{{ question | upper }}", template_format="jinja2")),
            ("assistant", "ok"),
        ]
    )
    history = [Message.user("earlier"), Message.assistant("reply")]
    messages = prompt.format_messages(topic="maths", history=history, question="why?")
    assert messages == [
        Message.system("You help with maths."),
        fixed,
        *history,
        Message.user("why?"),
        Message.assistant("Thinking about maths"),
        Message.user("WHY?"),
        Message.assistant("ok"),
    ]
    assert messages[1] is fixed


def test_chat_input_variables_union_in_order_with_required_placeholders_only() -> None:
    prompt = ChatPromptTemplate(
        [
            ("system", "{b} {a}"),
            MessagesPlaceholder("history"),
            MessagesPlaceholder("scratch", optional=True),
            ("user", "{a} {c}"),
        ]
    )
    assert prompt.input_variables == ["b", "a", "history", "c"]


def test_chat_optional_placeholder_missing_adds_no_messages() -> None:
    prompt = ChatPromptTemplate([MessagesPlaceholder("h", optional=True), ("user", "{q}")])
    assert prompt.format_messages(q="x") == [Message.user("x")]


def test_chat_missing_variable_or_placeholder_raises_naming_it() -> None:
    prompt = ChatPromptTemplate([("system", "{rules}"), MessagesPlaceholder("history")])
    with pytest.raises(PromptError) as caught:
        prompt.format_messages(history=[])
    assert caught.value.variable == "rules"
    with pytest.raises(PromptError) as caught:
        prompt.format_messages(rules="r")
    assert caught.value.variable == "history"


def test_chat_format_is_role_content_lines() -> None:
    prompt = ChatPromptTemplate([("system", "be brief"), ("human", "{q}")])
    assert prompt.format(q="2+2?") == "system: be brief\nuser: 2+2?"


def test_chat_partial_removes_variables_and_evaluates_callables_per_call() -> None:
    counter = itertools.count(1)
    prompt = ChatPromptTemplate([("system", "turn {n}"), ("user", "{q}"), ("ai", "{n}")])
    partial = prompt.partial(n=lambda: next(counter))
    assert partial.input_variables == ["q"]
    assert prompt.input_variables == ["n", "q"]
    assert partial.format(q="a") == "system: turn 1\nuser: a\nassistant: 1"
    assert partial.format(q="b") == "system: turn 2\nuser: b\nassistant: 2"


def test_chat_partial_can_fill_a_placeholder() -> None:
    history = [Message.user("earlier")]
    prompt = ChatPromptTemplate([MessagesPlaceholder("history"), ("user", "{q}")])
    partial = prompt.partial(history=history)
    assert partial.input_variables == ["q"]
    assert partial.format_messages(q="now") == [*history, Message.user("now")]


def test_chat_jinja2_template_format_applies_to_template_strings() -> None:
    prompt = ChatPromptTemplate(
        [("system", "{{ rules }}"), ("user", "{% for q in qs %}{{ q }};{% endfor %}")],
        template_format="jinja2",
    )
    assert prompt.input_variables == ["rules", "qs"]
    assert prompt.format_messages(rules="{r}", qs=["a", "b"]) == [
        Message.system("{r}"),
        Message.user("a;b;"),
    ]


def test_chat_jinja2_sandbox_applies() -> None:
    prompt = ChatPromptTemplate([("user", "{{ x.__class__.__mro__ }}")], template_format="jinja2")
    with pytest.raises(PromptError, match="sandbox"):
        prompt.format_messages(x="s")


@pytest.mark.parametrize("field", UNSAFE_FIELDS)
def test_chat_rejects_unsafe_f_string_fields_when_built(field: str) -> None:
    with pytest.raises(PromptError, match="not allowed"):
        ChatPromptTemplate([("user", field)])


def test_chat_rejects_unknown_role_naming_it() -> None:
    with pytest.raises(PromptError, match="'robot'"):
        ChatPromptTemplate([("robot", "hi")])
    with pytest.raises(PromptError, match="'tool'"):
        ChatPromptTemplate([("tool", "hi")])


@pytest.mark.parametrize("item", ["just text", ("user",), ("user", "a", "b"), ("user", 3)])
def test_chat_rejects_items_of_the_wrong_shape(item: object) -> None:
    with pytest.raises(TypeError):
        ChatPromptTemplate([item])  # type: ignore[list-item]


# --- shared protocol --------------------------------------------------------------------


def test_both_template_classes_satisfy_base_prompt_template() -> None:
    def first_text(prompt: BasePromptTemplate, **values: object) -> str:
        return prompt.format_messages(**values)[0].content

    text = PromptTemplate("{a}")
    chat = ChatPromptTemplate([("system", "{a}")])
    assert isinstance(text, BasePromptTemplate)
    assert isinstance(chat, BasePromptTemplate)
    assert first_text(text, a="t") == first_text(chat, a="t") == "t"
    assert not isinstance(object(), BasePromptTemplate)


def test_package_exports_the_public_names() -> None:
    assert set(prompts.__all__) >= {
        "BasePromptTemplate",
        "ChatPromptTemplate",
        "MessagesPlaceholder",
        "PromptError",
        "PromptTemplate",
    }


def test_a_variable_may_be_named_self() -> None:
    assert PromptTemplate.from_template("{self} and {other}").format(self="a", other="b") == (
        "a and b"
    )
    chat = ChatPromptTemplate([("user", "{self}")])
    assert chat.format_messages(self="x")[0].content == "x"


def test_jinja2_variables_left_out_of_input_variables_are_optional() -> None:
    template = PromptTemplate(
        "{% if history is defined %}{{ history }} {% endif %}Q: {{ input }}",
        input_variables=["input"],
        template_format="jinja2",
    )
    assert template.input_variables == ["input"]
    assert template.format(input="hi") == "Q: hi"
    assert template.format(input="hi", history="before") == "before Q: hi"


@pytest.mark.parametrize("template", [123, None, b"Tell me about {topic}", ["{topic}"]])
def test_a_template_that_is_not_a_str_is_refused_naming_the_type(template: object) -> None:
    name = type(template).__name__
    with pytest.raises(TypeError, match=rf"^a prompt template must be a str, got {name}$"):
        PromptTemplate.from_template(template)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a str"):
        PromptTemplate(template)  # type: ignore[arg-type]
