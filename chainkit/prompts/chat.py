"""ChatPromptTemplate: a list of role templates, fixed messages and placeholders."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chainkit._elsewhere import Elsewhere
from chainkit._pipe import Pipeable
from chainkit._text import counted
from chainkit.prompts._partials import with_partials, with_values_fixed
from chainkit.prompts.errors import PromptAttributeError, PromptError, PromptTypeError
from chainkit.prompts.limits import TemplateLimits, checked_limits
from chainkit.prompts.placeholder import MessagesPlaceholder
from chainkit.prompts.template import PromptTemplate, TemplateFormat
from chainkit.schema import Message
from chainkit.schema.message import Role

MessageLike = tuple[str, str | PromptTemplate] | MessagesPlaceholder | Message

# "human" and "ai" are LangChain's names for the user and assistant roles.
_ROLES: dict[str, Role] = {
    "system": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
}


@dataclass(slots=True, frozen=True)
class _RolePrompt:
    """A template whose formatted text becomes one message with `role`."""

    role: Role
    prompt: PromptTemplate


class ChatPromptTemplate(Pipeable):
    """A chat prompt built from `(role, template)` pairs, MessagesPlaceholder slots and fixed
    Message objects (returned as they are, not copied).

    Roles are system, user and assistant, with "human" and "ai" accepted as aliases. Template
    strings use `template_format` and render within `limits`; a PromptTemplate given in a pair
    keeps its own format and limits.
    """

    __slots__ = ("_entries", "input_variables", "partial_variables")

    if not TYPE_CHECKING:  # to mypy they stay missing, so it flags them in user code
        from_messages = Elsewhere(
            "the constructor takes the messages: ChatPromptTemplate([(role, template), ...])",
            PromptAttributeError,
        )
        from_template = Elsewhere(
            "write ChatPromptTemplate([('user', template)])", PromptAttributeError
        )
        invoke = Elsewhere(
            "use prompt.format_messages(**values) for the messages to give a model",
            PromptAttributeError,
        )
        ainvoke = Elsewhere(
            "prompts format at once: use prompt.format_messages(**values)", PromptAttributeError
        )
        format_prompt = Elsewhere("use prompt.format_messages(**values)", PromptAttributeError)

    def __init__(
        self,
        messages: Sequence[MessageLike],
        *,
        template_format: TemplateFormat = "f-string",
        partial_variables: dict[str, Any] | None = None,
        limits: TemplateLimits | None = None,
    ) -> None:
        checked = checked_limits(limits)
        self._entries = tuple(_entry(item, template_format, checked) for item in messages)
        self.partial_variables: dict[str, Any] = dict(partial_variables or {})
        names: dict[str, None] = {}
        for entry in self._entries:
            if isinstance(entry, _RolePrompt):
                names.update(dict.fromkeys(entry.prompt.input_variables))
            elif isinstance(entry, MessagesPlaceholder) and not entry.optional:
                names[entry.name] = None
        self.input_variables: list[str] = [
            name for name in names if name not in self.partial_variables
        ]

    def format_messages(self, /, **values: Any) -> list[Message]:
        """Every entry in order: templates formatted, placeholders expanded, fixed messages
        as they are. Raises PromptError naming a missing or wrongly typed variable."""
        merged = with_partials(self.partial_variables, values)
        messages: list[Message] = []
        for entry in self._entries:
            if isinstance(entry, _RolePrompt):
                messages.append(Message(entry.role, entry.prompt.format(**merged)))
            elif isinstance(entry, MessagesPlaceholder):
                messages.extend(entry.messages(merged))
            else:
                messages.append(entry)
        return messages

    def format(self, /, **values: Any) -> str:
        """The messages as readable text, one `role: content` line each."""
        return "\n".join(f"{m.role}: {m.content}" for m in self.format_messages(**values))

    def partial(self, /, **values: Any) -> ChatPromptTemplate:
        """A copy with `values` fixed; a callable value is called on every format."""
        return with_values_fixed(self, values)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({counted(len(self._entries), 'message')}, "
            f"input_variables={self.input_variables!r})"
        )


def _placeholder_name(template: object) -> str:
    """The variable a LangChain placeholder's "{history}" names."""
    text = template if isinstance(template, str) else ""
    return text.strip().removeprefix("{").removesuffix("}").strip() or "history"


def _entry(
    item: MessageLike, template_format: TemplateFormat, limits: TemplateLimits
) -> _RolePrompt | MessagesPlaceholder | Message:
    if isinstance(item, MessagesPlaceholder | Message):
        return item
    if not isinstance(item, tuple) or len(item) != 2:
        raise PromptTypeError(
            "chat prompt items must be (role, template) pairs, MessagesPlaceholder or "
            f"Message; got {type(item).__name__}"
        )
    role_name, template = item
    role = _ROLES.get(role_name) if isinstance(role_name, str) else None
    if role_name == "placeholder":
        raise PromptError(
            f"('placeholder', {template!r}) is LangChain's way to write a placeholder: write "
            f"MessagesPlaceholder({_placeholder_name(template)!r}, optional=True)",
            field=str(template),
        )
    if role is None:
        raise PromptError(
            f"unknown chat prompt role {role_name!r}; expected one of {sorted(_ROLES)}",
            field=str(role_name),
        )
    if isinstance(template, str):
        return _RolePrompt(
            role, PromptTemplate(template, template_format=template_format, limits=limits)
        )
    if isinstance(template, PromptTemplate):
        return _RolePrompt(role, template)
    raise PromptTypeError(
        f"template for role {role_name!r} must be a str or PromptTemplate, "
        f"got {type(template).__name__}"
    )
