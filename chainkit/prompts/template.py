"""PromptTemplate: a text template with named variables, in f-string or jinja2 syntax."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from chainkit._elsewhere import Elsewhere
from chainkit._pipe import Pipeable
from chainkit.prompts._fstring import FStringTemplate
from chainkit.prompts._partials import with_partials, with_values_fixed
from chainkit.prompts.errors import PromptAttributeError, PromptError, PromptTypeError
from chainkit.prompts.limits import TemplateLimits, checked_limits
from chainkit.schema import Message

if TYPE_CHECKING:
    from chainkit.prompts._sandbox.environment import JinjaTemplate

TemplateFormat = Literal["f-string", "jinja2"]


class PromptTemplate(Pipeable):
    """A template formatted with named values.

    f-string templates take plain `{name}` fields only (`{{`/`}}` are literal braces); jinja2
    templates render in a sandbox, each rendering within `limits` (TemplateLimits' defaults
    when None; f-string rendering is linear in its values and needs none). The template is
    compiled once; if `template` or
    `template_format` is reassigned, the next format compiles and validates it again.
    Values not used by the template are ignored. Explicit `input_variables` must name exactly
    the variables the template uses that no partial fills (PromptError otherwise); left out,
    they are read from the template.
    """

    __slots__ = (
        "_compiled",
        "_compiled_format",
        "_compiled_source",
        "_filled",
        "input_variables",
        "limits",
        "partial_variables",
        "template",
        "template_format",
    )
    if not TYPE_CHECKING:  # to mypy they stay missing, so it flags them in user code
        invoke = Elsewhere(
            "use prompt.format(**values) for the text, or prompt.format_messages(**values) "
            "for the messages to give a model",
            PromptAttributeError,
        )
        ainvoke = Elsewhere(
            "prompts format at once: use prompt.format(**values)", PromptAttributeError
        )
        format_prompt = Elsewhere(
            "use prompt.format_messages(**values), or prompt.format(**values) for the text",
            PromptAttributeError,
        )

    # The template and format it was compiled from, the partials it was filled with, and the
    # filled template: one tuple, replaced whole, so that threads formatting at once never see
    # a mismatched pair.
    _filled: tuple[str, TemplateFormat, dict[str, Any], FStringTemplate | None]

    def __init__(
        self,
        template: str,
        input_variables: list[str] | None = None,
        template_format: TemplateFormat = "f-string",
        partial_variables: dict[str, Any] | None = None,
        *,
        limits: TemplateLimits | None = None,
    ) -> None:
        if not isinstance(template, str):
            raise PromptTypeError(f"a prompt template must be a str, got {type(template).__name__}")
        self.limits = checked_limits(limits)
        self.template = template
        self.template_format = template_format
        self.partial_variables: dict[str, Any] = dict(partial_variables or {})
        used = [name for name in self._compile().variables if name not in self.partial_variables]
        if input_variables is not None:
            declared = [
                name
                for name in dict.fromkeys(input_variables)
                if name not in self.partial_variables
            ]
            # A jinja2 template may read a variable only `if x is defined`: leaving it out of
            # input_variables makes it optional, so only f-string templates must list them all.
            _check_declared(declared, used, all_needed=template_format == "f-string")
            used = declared  # the caller's order
        self.input_variables: list[str] = used

    @classmethod
    def from_template(
        cls,
        template: str,
        *,
        template_format: TemplateFormat = "f-string",
        partial_variables: dict[str, Any] | None = None,
        limits: TemplateLimits | None = None,
    ) -> PromptTemplate:
        """A template whose input variables are read from the template text."""
        return cls(
            template,
            template_format=template_format,
            partial_variables=partial_variables,
            limits=limits,
        )

    def format(self, /, **values: Any) -> str:
        """The template filled with `values` over the partial values.

        Raises PromptError naming a variable with no value, or the field of a template that
        was made invalid after construction.
        """
        return self._render(values)

    def format_messages(self, /, **values: Any) -> list[Message]:
        """The formatted text as one user message."""
        return [Message.user(self._render(values))]

    def _render(self, values: dict[str, Any]) -> str:
        partials = self.partial_variables
        if partials and partials.keys().isdisjoint(values):
            filled = self._filled_for(partials)
            if filled is not None:
                return filled.render(values)
        compiled = self._current()
        if isinstance(compiled, FStringTemplate):
            return compiled.render(with_partials(partials, values))
        return compiled.render(with_partials(partials, values), self.limits)

    def _filled_for(self, partials: dict[str, Any]) -> FStringTemplate | None:
        """The f-string template with the partial values written in, made once and kept while
        the template, its format and the partials stay the same (checked here, without
        `_current`: this runs on every format); None for a jinja2 template, or unless every
        partial value is a str (a callable is called on every format, and another object may
        change between formats)."""
        try:
            template, template_format, filled_with, filled = self._filled
            if (
                template is self.template
                and template_format is self.template_format
                and filled_with == partials
            ):
                return filled
        except AttributeError:
            pass  # not filled yet
        compiled = self._current()
        filled = None
        if isinstance(compiled, FStringTemplate) and all(
            type(value) is str for value in partials.values()
        ):
            filled = compiled.filled(partials)
        self._filled = (self.template, self.template_format, dict(partials), filled)
        return filled

    def partial(self, /, **values: Any) -> PromptTemplate:
        """A copy with `values` fixed; a callable value is called on every format."""
        return with_values_fixed(self, values)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(template={self.template!r}, "
            f"input_variables={self.input_variables!r}, "
            f"template_format={self.template_format!r}, "
            f"partial_variables={sorted(self.partial_variables)!r})"
        )

    def _current(self) -> FStringTemplate | JinjaTemplate:
        # Identity, not equality: a cheap check that still catches any reassignment, and an
        # instance made without __init__ has no compiled slots at all.
        try:
            if (
                self.template is self._compiled_source
                and self.template_format is self._compiled_format
            ):
                return self._compiled
        except AttributeError:
            pass
        return self._compile()

    def _compile(self) -> FStringTemplate | JinjaTemplate:
        source, template_format = self.template, self.template_format
        compiled: FStringTemplate | JinjaTemplate
        if template_format == "f-string":
            compiled = FStringTemplate(source)
        elif template_format == "jinja2":
            # Imported here so that jinja2 loads only once a jinja2 template is built.
            from chainkit.prompts._sandbox.environment import JinjaTemplate

            compiled = JinjaTemplate(source)
        else:
            raise PromptError(
                f"unknown template_format {template_format!r}; expected 'f-string' or 'jinja2'",
                field=str(template_format),
            )
        self._compiled = compiled
        self._compiled_source = source
        self._compiled_format = template_format
        return compiled


def _check_declared(declared: list[str], used: list[str], *, all_needed: bool) -> None:
    """PromptError naming the differences when `declared` input variables are not the `used`
    ones: a template that would fail, or wait for a value it never reads, at format time."""
    missing = [name for name in used if name not in declared] if all_needed else []
    extra = [name for name in declared if name not in used]
    if not (missing or extra):
        return
    problems = []
    if missing:
        problems.append(f"the template uses {missing}, which input_variables leaves out")
    if extra:
        problems.append(f"input_variables names {extra}, which the template does not use")
    raise PromptError(
        f"input_variables do not match the template: {'; '.join(problems)}",
        variable=(missing or extra)[0],
    )
