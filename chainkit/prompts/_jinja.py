"""The jinja2 sandbox every chainkit jinja2 template renders in, and its two environments.

Importing this module imports jinja2, so callers import it only when a jinja2 template is
used. Templates may come from outside, so one sandbox policy holds for all of them:

- attribute access the sandbox deems unsafe (`{{ x.__class__ }}`) raises instead of rendering
  as empty text, and the values a template is given cannot be changed (`messages.append`);
- `*`, `**` and `+` refuse to build a string or list over MAX_ITEMS items or an integer over
  MAX_INT_DIGITS digits, estimated before computing, so a one-line template cannot take
  gigabytes of memory or minutes of CPU (`range` is already capped by the sandbox);
- whatever a template raises while it renders reaches the caller as a PromptError.

These bounds stop the cheap one-expression blowups; they do not make rendering a hostile
template free (a loop of `~` or a width-taking filter can still grow text), so a service that
renders templates from strangers should still bound time and memory per process.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NoReturn

import jinja2
import jinja2.exceptions
import jinja2.ext
import jinja2.meta
import jinja2.nodes
import jinja2.parser
import jinja2.runtime
import jinja2.sandbox

from chainkit.prompts.errors import PromptError

MAX_ITEMS = 1_000_000
"""The most characters or items a template's `*` or `+` may build in one string or list."""

MAX_INT_DIGITS = 10_000
"""The most decimal digits a template's `*` or `**` may build in one integer."""

_MAX_INT_BITS = math.ceil(MAX_INT_DIGITS * math.log2(10))
_SEQUENCES = (str, bytes, list, tuple)


class Sandbox(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """jinja2's immutable sandbox with chainkit's policy (see the module docstring)."""

    intercepted_binops = frozenset({"*", "**", "+"})

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        # The stock sandbox returns an undefined value here, which a lenient template renders
        # as empty text or tests with `is defined`; no template has business there.
        raise jinja2.exceptions.SecurityError(
            f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe"
        )

    def call_binop(
        self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any
    ) -> Any:
        _check_size(operator, left, right)
        return super().call_binop(context, operator, left, right)


def _check_size(operator: str, left: Any, right: Any) -> None:
    """Raises PromptError when `left operator right` would exceed the sandbox's bounds."""
    if operator == "+":
        if isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
            _check_items(len(left) + len(right), operator)
    elif operator == "*":
        if isinstance(left, int) and isinstance(right, int):
            if left.bit_length() + right.bit_length() > _MAX_INT_BITS:
                raise _too_many_digits(operator)
        elif isinstance(left, int) and isinstance(right, _SEQUENCES):
            _check_items(left * len(right), operator)
        elif isinstance(left, _SEQUENCES) and isinstance(right, int):
            _check_items(len(left) * right, operator)
    elif _power_too_big(left, right):
        raise _too_many_digits(operator)


def _power_too_big(base: Any, exponent: Any) -> bool:
    """Whether integer `base ** exponent` would pass the digit limit, judged from log2 of the
    result. A negative exponent gives a float, which overflows by raising, not by growing."""
    if not (isinstance(base, int) and isinstance(exponent, int)):
        return False
    if exponent <= 0 or abs(base) <= 1:
        return False
    # An exponent over the bit limit passes it for any base of 2 or more; checking it first
    # also keeps the float product from overflowing.
    return exponent > _MAX_INT_BITS or math.log2(abs(base)) * exponent > _MAX_INT_BITS


def _check_items(count: int, operator: str) -> None:
    if count > MAX_ITEMS:
        raise PromptError(
            f"template's {operator!r} would build {count} items; the sandbox allows at most "
            f"{MAX_ITEMS} characters or items in one string or list"
        )


def _too_many_digits(operator: str) -> PromptError:
    return PromptError(
        f"template's {operator!r} would build an integer over the sandbox's limit of "
        f"{MAX_INT_DIGITS} digits"
    )


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
    env.filters["tojson"] = _tojson
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

    def render(self, values: Mapping[str, Any]) -> str:
        """The rendered text; PromptError for a missing variable, a blocked access, a result
        over the sandbox's bounds or anything else the template raises."""
        try:
            return self._template.render(values)
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
