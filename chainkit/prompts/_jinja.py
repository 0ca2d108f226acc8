"""The jinja2 sandbox every chainkit jinja2 template renders in.

jinja2 is imported on first use only, so programs that never build a jinja2 template never
load it. Templates may come from outside, so rendering happens in jinja2's sandbox, which
blocks attribute access such as `{{ x.__class__.__mro__ }}`, and with StrictUndefined, so a
missing variable is an error rather than silently empty text.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from chainkit.prompts.errors import PromptError

if TYPE_CHECKING:
    import jinja2
    import jinja2.sandbox


@functools.cache
def environment() -> jinja2.sandbox.SandboxedEnvironment:
    """The shared sandboxed environment, created on first call."""
    import jinja2
    import jinja2.sandbox

    return jinja2.sandbox.SandboxedEnvironment(
        undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True
    )


class JinjaTemplate:
    """A jinja2 template compiled once in the sandbox; `variables` are the names it reads from
    its inputs, in order of first appearance."""

    __slots__ = ("_template", "variables")

    def __init__(self, source: str) -> None:
        import jinja2
        import jinja2.meta
        import jinja2.nodes

        env = environment()
        try:
            tree = env.parse(source)
        except jinja2.TemplateSyntaxError as error:
            lines = source.splitlines()
            line = lines[error.lineno - 1] if 0 < error.lineno <= len(lines) else ""
            raise PromptError(
                f"invalid jinja2 template at line {error.lineno}: {error.message}: {line!r}",
                field=line,
            ) from None
        undeclared = jinja2.meta.find_undeclared_variables(tree)
        self.variables: list[str] = list(
            dict.fromkeys(
                node.name for node in tree.find_all(jinja2.nodes.Name) if node.name in undeclared
            )
        )
        self._template = env.from_string(tree)

    def render(self, values: Mapping[str, Any]) -> str:
        """The rendered text; PromptError for a missing variable or a blocked access."""
        import jinja2

        try:
            return self._template.render(values)
        except jinja2.exceptions.SecurityError as error:
            raise PromptError(f"jinja2 sandbox blocked unsafe access: {error}") from None
        except jinja2.UndefinedError as error:
            raise self._undefined(error, values) from None

    def _undefined(self, error: jinja2.UndefinedError, values: Mapping[str, Any]) -> PromptError:
        message = str(error)
        for name in self.variables:
            # StrictUndefined words a missing top-level name exactly like this.
            if name not in values and message == f"{name!r} is undefined":
                return PromptError.missing(name)
        return PromptError(f"jinja2 template used an undefined value: {message}")
