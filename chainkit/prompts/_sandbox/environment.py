"""The jinja2 sandbox every chainkit jinja2 template renders in, and its two environments.

Importing this module imports jinja2, so callers import it only when a jinja2 template is
used. Templates may come from outside, so one sandbox policy holds for all of them:

- attribute access the sandbox deems unsafe (`{{ x.__class__ }}`) raises instead of rendering
  as empty text, and the values a template is given cannot be changed (`messages.append`);
- every rendering runs within a budget (TemplateLimits): loops, calls, operators, filters,
  comparisons and output are charged as they run (see bounded.py and instrument.py), results
  that would be too long or too large are refused before they are computed, and no filter,
  call or operator runs at compile time (constant folding would run it outside any budget);
- whatever a template raises while it renders reaches the caller as a PromptError, and a
  spent budget as a PromptError whose `limit` names the TemplateLimits field.
"""

from __future__ import annotations

import functools
import json
import types
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NoReturn

import jinja2
import jinja2.compiler
import jinja2.exceptions
import jinja2.ext
import jinja2.meta
import jinja2.nodes
import jinja2.parser
import jinja2.runtime
import jinja2.sandbox
import markupsafe

from chainkit.prompts._sandbox import bounded, bounded_filters
from chainkit.prompts._sandbox.budget import (
    active_budget,
    charge_result,
    current_budget,
    rendering,
    text_size,
)
from chainkit.prompts._sandbox.instrument import instrument
from chainkit.prompts.errors import PromptError
from chainkit.prompts.limits import DEFAULT_LIMITS, TemplateLimits


class _Hooks(jinja2.ext.Extension):
    """Holds the functions instrumented templates call (see _instrument)."""

    def __init__(self, environment: jinja2.Environment) -> None:
        super().__init__(environment)
        self.iterate = bounded.Counted
        self.charge_body = bounded.charge_body
        self.concatenate = bounded.concatenate
        self.compare = bounded.compare
        self.take_slice = bounded.take_slice
        self.hashed = bounded.hashed


class _CodeGenerator(jinja2.compiler.CodeGenerator):
    """jinja2's code generator, calling the hooks directly: they are chainkit's own code, and
    the sandbox's call checks would cost more than most of what they guard."""

    def visit_Call(
        self,
        node: jinja2.nodes.Call,
        frame: jinja2.compiler.Frame,
        forward_caller: bool = False,
    ) -> None:
        hook = node.node
        if not (
            isinstance(hook, jinja2.nodes.ExtensionAttribute)
            and hook.identifier == _Hooks.identifier
        ):
            super().visit_Call(node, frame, forward_caller=forward_caller)
            return
        self.visit(hook, frame)
        self.write("(")
        for index, argument in enumerate(node.args):
            self.write(", " if index else "")
            self.visit(argument, frame)
        self.write(")")


class BudgetedTemplate(jinja2.Template):
    """A template whose `render` runs within the default budget when no rendering is in
    progress; chainkit's own code renders through `render_within` with the caller's limits."""

    def render(self, *args: Any, **kwargs: Any) -> str:
        if active_budget() is not None:
            return super().render(*args, **kwargs)
        with rendering(DEFAULT_LIMITS):
            return super().render(*args, **kwargs)


def render_within(
    template: jinja2.Template, limits: TemplateLimits, values: Mapping[str, Any]
) -> str:
    """`template` rendered with `values`, within a fresh budget of `limits`."""
    with rendering(limits):
        return template.render(values)


class Sandbox(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """jinja2's immutable sandbox with chainkit's policy (see the module docstring)."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    code_generator_class = _CodeGenerator
    template_class = BudgetedTemplate
    concat = staticmethod(bounded.join_output)

    def __init__(self, **options: Any) -> None:
        extensions = [*options.pop("extensions", ()), _Hooks]
        super().__init__(
            optimized=False, finalize=bounded.finalize, extensions=extensions, **options
        )
        checks = bounded_filters
        self.filters.update(
            checks.guard_all("filter", self.filters, checks.FILTER_CHECKS, checks.text_check)
        )
        self.tests.update(
            checks.guard_all("test", self.tests, checks.TEST_CHECKS, checks.constant_check)
        )
        self.globals["lipsum"] = checks.lipsum

    def _generate(
        self,
        source: jinja2.nodes.Template,
        name: str | None,
        filename: str | None,
        defer_init: bool = False,
    ) -> str:
        return super()._generate(instrument(source, _Hooks.identifier), name, filename, defer_init)

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        # The stock sandbox returns an undefined value here, which a lenient template renders
        # as empty text or tests with `is defined`; no template has business there.
        raise jinja2.exceptions.SecurityError(
            f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe"
        )

    def call_binop(
        self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any
    ) -> Any:
        budget = current_budget()
        if operator == "+" and type(left) is str and type(right) is str:
            # Joining text, the commonest operation in chat templates, is charged in one go.
            budget.build(len(left) + len(right), "'+'")
            return left + right
        bounded.check_binop(budget, operator, left, right)
        result = super().call_binop(context, operator, left, right)
        charge_result(budget, result, repr(operator))
        return result

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(argument, tuple):
            # Looking a tuple up in a mapping hashes all of it.
            text_size(argument, current_budget())
        return super().getitem(obj, argument)

    def wrap_str_format(self, value: Any) -> Any:
        # As the stock sandbox does, but with a formatter that bounds each field.
        if not isinstance(value, types.MethodType | types.BuiltinMethodType):
            return None
        text = getattr(value, "__self__", None)
        if value.__name__ not in ("format", "format_map") or not isinstance(text, str):
            return None
        formatter: bounded.BoundedFormatter
        if isinstance(text, markupsafe.Markup):
            formatter = bounded.BoundedEscapeFormatter(self, escape=text.escape)
        else:
            formatter = bounded.BoundedFormatter(self)
        by_mapping = value.__name__ == "format_map"

        def formatted(*args: Any, **kwargs: Any) -> str:
            if by_mapping:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one positional argument")
                kwargs = args[0]
                args = ()
            return type(text)(formatter.vformat(text, args, kwargs))

        return functools.update_wrapper(formatted, value)

    def call(
        __self,
        __context: jinja2.runtime.Context,
        __obj: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        budget = current_budget()
        if isinstance(__obj, jinja2.runtime.LoopContext) and args:
            args = (bounded.recursive_loop_items(__obj, args[0]), *args[1:])
        args = bounded.check_call(budget, __obj, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        bounded.charge_call_result(budget, result, __obj)
        return result


class _GenerationTag(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}`: HF marks the assistant's own tokens with it
    (for training masks); rendering a prompt needs only the body, in a scope of its own."""

    tags = {"generation"}  # noqa: RUF012 - jinja2 declares `tags` as a plain set

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


@functools.cache
def environment() -> Sandbox:
    """The environment for PromptTemplate: a missing variable is an error (StrictUndefined)
    rather than silently empty text, and output is kept as written."""
    return Sandbox(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)


@functools.cache
def chat_environment() -> Sandbox:
    """The environment for chat templates, with HuggingFace's `chat_template` settings and
    helpers, so a model's own template renders as it does there."""
    env = Sandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[jinja2.ext.loopcontrols, _GenerationTag],
    )
    env.filters["tojson"] = bounded_filters.guarded(
        "the tojson filter", _tojson, bounded_filters.hf_tojson_check
    )
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # HF's tojson: plain json.dumps, no HTML escaping (jinja's own filter escapes <, > and &).
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> NoReturn:
    raise PromptError(f"chat template raised: {message}")


def _strftime_now(date_format: str) -> str:
    if isinstance(date_format, str):
        # A directive such as %c writes up to twelve times its own length.
        current_budget().allow(16 * len(date_format), "strftime_now")
    return datetime.now().strftime(date_format)


def compile_error(error: Exception, kind: str, source: str) -> PromptError:
    """The PromptError for `error`, raised while compiling `source` as a `kind` template."""
    if isinstance(error, jinja2.TemplateSyntaxError):
        lines = source.splitlines()
        line = lines[error.lineno - 1] if 0 < error.lineno <= len(lines) else ""
        return PromptError(
            f"invalid {kind} at line {error.lineno}: {error.message}: {line!r}", field=line
        )
    # The parser recurses once per nesting level, so absurdly nested input ends here.
    return PromptError(f"invalid {kind}: {type(error).__name__}: {error}", field=source[:200])


def render_error(error: Exception, kind: str) -> PromptError:
    """The PromptError for `error`, raised while a `kind` template rendered."""
    if isinstance(error, PromptError):
        return error
    if isinstance(error, jinja2.exceptions.SecurityError):
        return PromptError(f"jinja2 sandbox blocked unsafe access: {error}")
    line = _template_line(error)
    where = "" if line is None else f" at line {line}"
    return PromptError(f"{kind} failed{where}: {type(error).__name__}: {error}")


def _template_line(error: Exception) -> int | None:
    """The template line that raised: jinja2 rewrites the traceback so that the template's
    own frames carry its file name and line numbers."""
    line = None
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == "<template>":
            line = trace.tb_lineno
        trace = trace.tb_next
    return line


class JinjaTemplate:
    """A jinja2 template compiled once in the sandbox; `variables` are the names it reads from
    its inputs, in order of first appearance."""

    __slots__ = ("_template", "variables")

    def __init__(self, source: str) -> None:
        env = environment()
        try:
            tree = env.parse(source)
            undeclared = jinja2.meta.find_undeclared_variables(tree)
            self.variables: list[str] = list(
                dict.fromkeys(
                    node.name
                    for node in tree.find_all(jinja2.nodes.Name)
                    if node.name in undeclared
                )
            )
            self._template = env.from_string(tree)
        except Exception as error:
            raise compile_error(error, "jinja2 template", source) from None

    def render(self, values: Mapping[str, Any], limits: TemplateLimits) -> str:
        """The rendered text; PromptError for a missing variable, a blocked access, a spent
        budget or anything else the template raises."""
        try:
            return render_within(self._template, limits, values)
        except PromptError:
            raise
        except jinja2.UndefinedError as error:
            raise self._undefined(error, values) from None
        except Exception as error:
            raise render_error(error, "jinja2 template") from error

    def _undefined(self, error: jinja2.UndefinedError, values: Mapping[str, Any]) -> PromptError:
        message = str(error)
        for name in self.variables:
            # StrictUndefined words a missing top-level name exactly like this.
            if name not in values and message == f"{name!r} is undefined":
                return PromptError.missing(name)
        return PromptError(f"jinja2 template used an undefined value: {message}")
