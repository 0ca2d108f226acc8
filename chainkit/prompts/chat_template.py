"""render_chat: a conversation rendered to one prompt string by a chat template.

A template is a built-in name (see CHAT_TEMPLATES) or a jinja2 chat template written to
HuggingFace's `chat_template` convention, so a model's own template can be used as it is. The
template sees:

- `messages`: dicts in the OpenAI request shape (role, content as a str or a list of parts,
  tool_calls with id/type/function{name, arguments}, tool_call_id, name), plus
  `reasoning_content` when a message has some and, on tool messages without a `name`, the tool's
  name as `name`;
- `tools`: OpenAI tool dicts, or None;
- `add_generation_prompt`;
- HuggingFace's helpers: the `tojson` filter (non-ASCII kept; HF's keyword arguments
  `ensure_ascii`, `indent`, `separators`, `sort_keys`), `raise_exception(message)` and
  `strftime_now(format)`.

Templates render in jinja2's immutable sandbox with HF's settings (trim_blocks, lstrip_blocks,
loop controls). Any failure, a blocked access or a template's own raise_exception included,
raises PromptError.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NoReturn

from chainkit.prompts.errors import PromptError
from chainkit.schema import Message, ToolInfo
from chainkit.schema.agentic import AgenticMessage
from chainkit.schema.convert import from_agentic

if TYPE_CHECKING:
    import jinja2
    import jinja2.sandbox

# ChatML as the Eino article prints it: the content on its own line, `<|im_end|>` on the next.
# An assistant's tool calls are written as a compact JSON array, after its text if it has any;
# tool messages show their content; reasoning is left out, as in most models' own templates.
# Given `tools`, the compact JSON of each tool goes in a <tools> list at the end of the first
# system message, after a blank line, or in a system message of its own when there is none.
CHATML = """\
{%- macro text(content) -%}
    {%- if content is string -%}
        {{- content -}}
    {%- else -%}
        {%- for part in content -%}
            {%- if part.type != 'text' -%}
                {{- raise_exception('chatml renders text only, not a ' ~ part.type ~ ' part') -}}
            {%- endif -%}
            {{- part.text -}}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro -%}
{%- macro turn(role, content) -%}
    {{- '<|im_start|>' ~ role ~ '\\n' ~ content ~ '\\n<|im_end|>\\n' -}}
{%- endmacro -%}
{%- set ns = namespace(tools='') -%}
{%- if tools -%}
    {%- set ns.tools = '<tools>\\n'
        ~ (tools | map('tojson', separators=(',', ':')) | join('\\n')) ~ '\\n</tools>' -%}
    {%- if not messages or messages[0].role != 'system' -%}
        {{- turn('system', ns.tools) -}}
    {%- endif -%}
{%- endif -%}
{%- for message in messages -%}
    {%- set content = text(message.content) -%}
    {%- if loop.first and message.role == 'system' and ns.tools -%}
        {%- set content = content ~ '\\n\\n' ~ ns.tools -%}
    {%- endif -%}
    {%- if message.role == 'assistant' and message.tool_calls -%}
        {%- set calls = message.tool_calls | tojson(separators=(',', ':')) -%}
        {%- set content = (content ~ '\\n' ~ calls) if content else calls -%}
    {%- endif -%}
    {{- turn(message.role, content) -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<|im_start|>assistant\\n' -}}
{%- endif -%}
"""

CHAT_TEMPLATES: Mapping[str, str] = MappingProxyType({"chatml": CHATML})


def render_chat(
    messages: Sequence[Message | AgenticMessage],
    tools: Sequence[ToolInfo | Mapping[str, Any]] | None = None,
    template: str = "chatml",
    *,
    add_generation_prompt: bool = True,
) -> str:
    """The prompt `template` makes of the conversation.

    AgenticMessages are converted with `from_agentic` first, so a conversation renders the same
    whichever form holds it. `template` is a name from CHAT_TEMPLATES or a jinja2 template
    string; each distinct string is compiled once.
    """
    source = CHAT_TEMPLATES.get(template)
    if source is None:
        if "{" not in template:
            raise PromptError(
                f"unknown chat template {template!r}: not a built-in "
                f"({', '.join(sorted(CHAT_TEMPLATES))}) and not a jinja2 template",
                field=template,
            )
        source = template
    import jinja2

    compiled = _compile(source)
    try:
        return compiled.render(
            messages=[_wire(message) for message in _as_messages(messages)],
            tools=None if tools is None else [_tool_dict(tool) for tool in tools],
            add_generation_prompt=add_generation_prompt,
        )
    except jinja2.exceptions.SecurityError as error:
        raise PromptError(f"jinja2 sandbox blocked unsafe access: {error}") from None
    except jinja2.TemplateError as error:
        raise PromptError(f"chat template failed: {error}") from None


def _as_messages(messages: Sequence[Message | AgenticMessage]) -> list[Message]:
    converted: list[Message] = []
    for message in messages:
        if isinstance(message, AgenticMessage):
            converted.extend(from_agentic([message]))
        else:
            converted.append(message)
    return converted


def _wire(message: Message) -> dict[str, Any]:
    data = message.to_dict(request=True)
    if message.role == "tool" and message.tool_name is not None:
        data.setdefault("name", message.tool_name)
    if message.reasoning_content:
        data["reasoning_content"] = message.reasoning_content
    return data


def _tool_dict(tool: ToolInfo | Mapping[str, Any]) -> dict[str, Any]:
    return tool.to_dict() if isinstance(tool, ToolInfo) else dict(tool)


@functools.lru_cache(maxsize=64)
def _compile(source: str) -> jinja2.Template:
    import jinja2

    try:
        return _environment().from_string(source)
    except jinja2.TemplateSyntaxError as error:
        raise PromptError(
            f"invalid chat template at line {error.lineno}: {error.message}", field=source
        ) from None


@functools.cache
def _environment() -> jinja2.sandbox.ImmutableSandboxedEnvironment:
    """HuggingFace's chat-template settings, in the sandbox that also forbids changing the
    values a template is given."""
    import jinja2.exceptions
    import jinja2.ext
    import jinja2.sandbox

    class Sandbox(jinja2.sandbox.ImmutableSandboxedEnvironment):
        # The stock sandbox turns an unsafe attribute into an undefined value, which renders
        # as empty text; a chat template has no business there, so fail loudly instead.
        def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
            raise jinja2.exceptions.SecurityError(
                f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe"
            )

    env = Sandbox(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
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
    try:
        return json.dumps(
            value,
            ensure_ascii=ensure_ascii,
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
        )
    except (TypeError, ValueError) as error:
        raise PromptError(f"chat template's tojson failed: {error}") from None


def _raise_exception(message: str) -> NoReturn:
    raise PromptError(f"chat template raised: {message}")


def _strftime_now(date_format: str) -> str:
    return datetime.now().strftime(date_format)
