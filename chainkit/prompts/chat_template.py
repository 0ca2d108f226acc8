"""render_chat: a conversation rendered to one prompt string by a chat template.

A template is a built-in name (see CHAT_TEMPLATES) or a jinja2 chat template written to
HuggingFace's `chat_template` convention, so a model's own template can be used as it is. The
template sees:

- `messages`: dicts in the OpenAI request shape (role, content as a str or a list of parts,
  tool_calls with id/type/function{name, arguments}, tool_call_id, name), plus
  `reasoning_content` when a message has some and, on tool messages without a `name`, the tool's
  name as `name`; as in HF and vLLM, a tool call's `arguments` is a dict when it holds a JSON
  object (templates `tojson` it), and the model's text otherwise;
- `tools`: OpenAI tool dicts, or None (render_chat takes ToolInfo, OpenAI tool dicts or
  chainkit Tools, and gives the template the dicts);
- `add_generation_prompt`, and any extra keyword given to render_chat (`bos_token`,
  `enable_thinking`, ...);
- HuggingFace's helpers: the `tojson` filter (non-ASCII kept; HF's keyword arguments
  `ensure_ascii`, `indent`, `separators`, `sort_keys`), `raise_exception(message)`,
  `strftime_now(format)` and the `{% generation %}` block.

Templates render in chainkit's jinja2 sandbox (chainkit/prompts/_jinja.py) with HF's settings
(trim_blocks, lstrip_blocks, loop controls). Any failure, a blocked access, a result over the
sandbox's size bounds or a template's own raise_exception included, raises PromptError.
Built-in templates are plain Python, so rendering with them never imports jinja2.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from chainkit.prompts.errors import PromptError, PromptTypeError
from chainkit.schema import Message, ToolInfo
from chainkit.schema.agentic import AgenticMessage
from chainkit.schema.convert import from_agentic

if TYPE_CHECKING:
    import jinja2


class DescribesTool(Protocol):
    """Anything that describes itself as a tool for a model, such as a chainkit Tool."""

    def info(self) -> ToolInfo: ...


ToolLike = ToolInfo | Mapping[str, Any] | DescribesTool
"""A tool as render_chat takes it: a ToolInfo, an OpenAI tool dict or a chainkit Tool."""

ChatRenderer = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None, bool], str]
"""A built-in template: (messages, tools, add_generation_prompt) -> prompt, over the same
values a jinja2 chat template sees (its arguments are left as the model's text)."""


def _chatml(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, add_generation_prompt: bool
) -> str:
    """ChatML as the Eino article prints it: the content on its own line, `<|im_end|>` on the
    next. An assistant's tool calls are written as a compact JSON array, after its text if it
    has any; tool messages show their content; reasoning is left out, as in most models' own
    templates. Given `tools`, the compact JSON of each tool goes in a <tools> list at the end of
    the first system message, after a blank line, or in a system message of its own when there
    is none."""
    listing = ""
    if tools:
        listing = "<tools>\n" + "\n".join(_compact_json(tool) for tool in tools) + "\n</tools>"
    turns: list[str] = []
    if listing and (not messages or messages[0]["role"] != "system"):
        turns.append(_chatml_turn("system", listing))
    for index, message in enumerate(messages):
        role = message["role"]
        content = _chatml_text(message["content"])
        if index == 0 and role == "system" and listing:
            content = f"{content}\n\n{listing}"
        calls = message.get("tool_calls")
        if role == "assistant" and calls:
            written = _compact_json(calls)
            content = f"{content}\n{written}" if content else written
        turns.append(_chatml_turn(role, content))
    if add_generation_prompt:
        turns.append("<|im_start|>assistant\n")
    return "".join(turns)


def _chatml_turn(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}\n<|im_end|>\n"


def _chatml_text(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content:
        if part["type"] != "text":
            raise PromptError(f"chatml renders text only, not a {part['type']!r} part")
        texts.append(part["text"])
    return "".join(texts)


def _compact_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise PromptError(f"chatml could not write a value as JSON: {error}") from None


CHAT_TEMPLATES: Mapping[str, ChatRenderer] = MappingProxyType({"chatml": _chatml})


def render_chat(
    messages: Sequence[Message | AgenticMessage],
    tools: Sequence[ToolLike] | None = None,
    template: str = "chatml",
    *,
    add_generation_prompt: bool = True,
    **template_vars: Any,
) -> str:
    """The prompt `template` makes of the conversation.

    AgenticMessages are converted with `from_agentic` first, so a conversation renders the same
    whichever form holds it. `template` is a name from CHAT_TEMPLATES or a jinja2 template
    string; each distinct string is compiled once. `template_vars` are passed to a jinja2
    template as extra variables; built-in templates take none and ignore them.
    """
    builtin = CHAT_TEMPLATES.get(template)
    if builtin is None and "{" not in template:
        raise PromptError(
            f"unknown chat template {template!r}: not a built-in "
            f"({', '.join(sorted(CHAT_TEMPLATES))}) and not a jinja2 template",
            field=template,
        )
    wire = [_wire(message) for message in _as_messages(messages)]
    tool_dicts = None if tools is None else [_tool_dict(tool) for tool in tools]
    if builtin is not None:
        return builtin(wire, tool_dicts, add_generation_prompt)
    from chainkit.prompts._jinja import render_error

    compiled = _compile(template)
    try:
        return compiled.render(
            template_vars,
            messages=[_with_argument_objects(message) for message in wire],
            tools=tool_dicts,
            add_generation_prompt=add_generation_prompt,
        )
    except PromptError:
        raise
    except Exception as error:
        raise render_error(error, "chat template") from error


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


def _tool_dict(tool: object) -> dict[str, Any]:
    if isinstance(tool, ToolInfo):
        return tool.to_dict()
    if isinstance(tool, Mapping):
        return dict(tool)
    info = getattr(tool, "info", None)
    described = info() if callable(info) else None
    if isinstance(described, ToolInfo):
        return described.to_dict()
    returned = f" whose info() returned {type(described).__name__}" if callable(info) else ""
    raise PromptTypeError(
        "render_chat tools must be ToolInfo, OpenAI tool dicts or objects whose info() "
        f"returns a ToolInfo (such as chainkit Tools); got {type(tool).__name__}{returned}"
    )


def _with_argument_objects(message: dict[str, Any]) -> dict[str, Any]:
    """`message` with each tool call's arguments as a dict when they hold a JSON object: HF's
    convention for chat templates, followed by vLLM, so Qwen2.5 and Llama 3.1 templates can
    `tojson` them. Anything else (truncated JSON, an array) stays the model's text."""
    for call in message.get("tool_calls", ()):
        function = call["function"]
        function["arguments"] = _json_object_or_text(function["arguments"])
    return message


def _json_object_or_text(text: str) -> Any:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return value if isinstance(value, dict) else text


@functools.lru_cache(maxsize=64)
def _compile(source: str) -> jinja2.Template:
    from chainkit.prompts._jinja import chat_environment, compile_error

    try:
        return chat_environment().from_string(source)
    except Exception as error:
        raise compile_error(error, "chat template", source) from None
