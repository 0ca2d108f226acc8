"""render_chat: a conversation rendered to one prompt string by a chat template.

A template is a built-in name (see CHAT_TEMPLATES) or a jinja2 chat template written to
HuggingFace's `chat_template` convention, so a model's own template can be used as it is. The
template sees the variables transformers gives it:

- `messages`: dicts in the OpenAI request shape (role, content as a str or a list of parts,
  tool_calls with id/type/function{name, arguments}, tool_call_id, name), plus, on a message
  with reasoning, `reasoning_content` and the same text as `thinking` (the name gpt-oss's
  template reads), and, on tool messages without a `name`, the tool's name as `name`;
- a tool call's `arguments`: when they hold a JSON object, a dict (HF's and vLLM's convention,
  which Qwen and Llama templates `tojson`), printed as transformers prints it (the dict's
  str, `{'city': 'Paris'}`), and the model's original JSON text where a template adds it to
  a string with `+` (DeepSeek's templates do, which transformers' dict cannot); anything
  else stays the model's text;
- `tools`: OpenAI tool dicts, or None (render_chat takes ToolInfo, OpenAI tool dicts or
  chainkit Tools, and gives the template the dicts); `documents` (None unless given);
- `add_generation_prompt`, and any extra keyword given to render_chat (`bos_token`,
  `enable_thinking`, `documents`, ...);
- HuggingFace's helpers: the `tojson` filter (non-ASCII kept; HF's keyword arguments
  `ensure_ascii`, `indent`, `separators`, `sort_keys`), `raise_exception(message)`,
  `strftime_now(format)` and the `{% generation %}` block.

Templates render in chainkit's jinja2 sandbox (chainkit/prompts/_sandbox/) with HF's settings
(trim_blocks, lstrip_blocks, loop controls), each rendering within `limits` (TemplateLimits).
Any failure, a blocked access, a spent budget or a template's own raise_exception included,
raises PromptError. Built-in templates are plain Python, linear in the conversation, so
rendering with them never imports jinja2.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from chainkit.prompts.errors import PromptError, PromptTypeError
from chainkit.prompts.limits import TemplateLimits, checked_limits
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


# The tool prompt of Qwen2.5's template, which "chatml" reproduces byte for byte.
_TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
)


def _chatml(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, add_generation_prompt: bool
) -> str:
    """ChatML as Qwen2.5's own chat template writes it, `<|im_start|>{role}\n{content}<|im_end|>\n`
    per turn (the layout vLLM and llama.cpp use for ChatML models), except that no default
    system prompt is added: where Qwen2.5 writes "You are Qwen, ..." for a conversation without
    a system message, chatml writes no system turn, or one with the tool listing only.

    Given `tools`, the first system message is followed by a blank line and the tool listing
    (each tool's JSON on a line); an assistant's tool calls follow its text as
    `<tool_call>` blocks with the arguments' JSON object; consecutive tool results go in one
    user turn as `<tool_response>` blocks; reasoning is left out, as Qwen2.5 leaves it out."""
    turns: list[str] = []
    opens_with_system = bool(messages) and messages[0]["role"] == "system"
    if tools:
        system = _chatml_text(messages[0]["content"]) + "\n\n" if opens_with_system else ""
        listing = "".join("\n" + _json(tool) for tool in tools)
        turns.append(f"<|im_start|>system\n{system}{_TOOLS_HEADER}{listing}{_TOOLS_FOOTER}")
    elif opens_with_system:
        turns.append(_chatml_turn("system", _chatml_text(messages[0]["content"])))
    last = len(messages) - 1
    for index, message in enumerate(messages):
        role = message["role"]
        content = _chatml_text(message["content"])
        calls = message.get("tool_calls")
        if role == "tool":
            if index == 0 or messages[index - 1]["role"] != "tool":
                turns.append("<|im_start|>user")
            turns.append(f"\n<tool_response>\n{content}\n</tool_response>")
            if index == last or messages[index + 1]["role"] != "tool":
                turns.append("<|im_end|>\n")
        elif role == "assistant" and calls:
            turns.append("<|im_start|>assistant" + (f"\n{content}" if content else ""))
            turns.extend(_chatml_tool_call(call["function"]) for call in calls)
            turns.append("<|im_end|>\n")
        elif index > 0 or role != "system":
            turns.append(_chatml_turn(role, content))
    if add_generation_prompt:
        turns.append("<|im_start|>assistant\n")
    return "".join(turns)


def _chatml_turn(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}<|im_end|>\n"


def _chatml_tool_call(function: dict[str, Any]) -> str:
    arguments = _json(_json_object_or_text(function["arguments"]))
    return (
        f'\n<tool_call>\n{{"name": "{function["name"]}", "arguments": {arguments}}}\n</tool_call>'
    )


def _json(value: Any) -> str:
    # As HF's tojson writes it: json.dumps with non-ASCII kept.
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise PromptError(f"chatml could not write a value as JSON: {error}") from None


def _eino_chatml(
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
        turns.append(_eino_turn("system", listing))
    for index, message in enumerate(messages):
        role = message["role"]
        content = _chatml_text(message["content"])
        if index == 0 and role == "system" and listing:
            content = f"{content}\n\n{listing}"
        calls = message.get("tool_calls")
        if role == "assistant" and calls:
            written = _compact_json(calls)
            content = f"{content}\n{written}" if content else written
        turns.append(_eino_turn(role, content))
    if add_generation_prompt:
        turns.append("<|im_start|>assistant\n")
    return "".join(turns)


def _eino_turn(role: str, content: str) -> str:
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


CHAT_TEMPLATES: Mapping[str, ChatRenderer] = MappingProxyType(
    {"chatml": _chatml, "chatml-eino": _eino_chatml}
)


def render_chat(
    messages: Sequence[Message | AgenticMessage],
    tools: Sequence[ToolLike] | None = None,
    template: str = "chatml",
    *,
    add_generation_prompt: bool = True,
    limits: TemplateLimits | None = None,
    **template_vars: Any,
) -> str:
    """The prompt `template` makes of the conversation.

    AgenticMessages are converted with `from_agentic` first, so a conversation renders the same
    whichever form holds it. `template` is a name from CHAT_TEMPLATES or a jinja2 template
    string; each distinct string is compiled once and renders within `limits` (TemplateLimits'
    defaults when None). `template_vars` are passed to a jinja2 template as extra variables;
    built-in templates take none and ignore them.
    """
    checked = checked_limits(limits)
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
    from chainkit.prompts._sandbox.environment import render_error, render_within

    compiled = _compile(template)
    values = {
        "documents": None,
        **template_vars,
        "messages": [_with_argument_objects(message) for message in wire],
        "tools": tool_dicts,
        "add_generation_prompt": add_generation_prompt,
    }
    try:
        return render_within(compiled, checked, values)
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
        data["reasoning_content"] = data["thinking"] = message.reasoning_content
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
    """`message` with each tool call's arguments as JsonArguments when they hold a JSON
    object; anything else (truncated JSON, an array) stays the model's text."""
    for call in message.get("tool_calls", ()):
        function = call["function"]
        text = function["arguments"]
        value = _json_object_or_text(text)
        if isinstance(value, dict):
            function["arguments"] = JsonArguments(value, text)
    return message


class JsonArguments(dict[str, Any]):
    """A tool call's arguments as a chat template sees them: the dict transformers would
    pass, so Qwen and Llama templates can `tojson` them and printing them (`{{ arguments }}`,
    `~`, `string`) writes the dict's str as it would; and, added to a string with `+`
    (`'...' + arguments`), the JSON text the model wrote, as DeepSeek's templates expect."""

    __slots__ = ("text",)

    def __init__(self, value: dict[str, Any], text: str) -> None:
        super().__init__(value)
        self.text = text

    def __add__(self, other: object) -> str:
        if isinstance(other, str):
            return self.text + other
        return NotImplemented

    def __radd__(self, other: object) -> str:
        if isinstance(other, str):
            return other + self.text
        return NotImplemented


def _json_object_or_text(text: str) -> Any:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return value if isinstance(value, dict) else text


@functools.lru_cache(maxsize=64)
def _compile(source: str) -> jinja2.Template:
    from chainkit.prompts._sandbox.environment import chat_environment, compile_error

    try:
        return chat_environment().from_string(source)
    except Exception as error:
        raise compile_error(error, "chat template", source) from None
