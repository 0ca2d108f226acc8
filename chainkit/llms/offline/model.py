"""OfflineModel: a deterministic stand-in for an LLM, so `chainkit run` works with no network.

It is a demo and default model, not a test double. Given a MRKL prompt (or native tools), it
picks the tool whose name and description best match the question (by BM25, the lexical
index `tools.ToolRetriever` uses), calls it with the argument
a model would write, and answers with the observation. The argument is the arithmetic
expression for a calculator, else what the question says besides asking for the tool
("北京天气怎么样?" asks a weather tool about "北京"). Native tool calls fill the schema:
numbers go to integer and number parameters, a choice named in the question to an enum, and
that text to the first required string parameter.

The built-in tools' descriptions are written for real models; what this model needs to match
questions to them, in English and Chinese, it keeps itself (`BUILTIN_KEYWORDS`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from chainkit._jsonschema.lenient import find_object
from chainkit._jsonschema.output import SCHEMA_MARK
from chainkit._search.bm25 import LexicalIndex
from chainkit._search.terms import terms, tokens
from chainkit.llms._streaming import stream_text
from chainkit.llms.model import BaseModel, ModelRequest
from chainkit.llms.offline._extract import answer_from_documents
from chainkit.llms.offline._question import (
    EXPRESSION_TERM,
    EXPRESSION_WEIGHT,
    MATH_TOKENS,
    find_expression,
    residual,
)
from chainkit.llms.output_strategies import FINAL_ANSWER_TOOL, StrategyName
from chainkit.schema import FunctionCall, Message, ToolCall, ToolInfo

# Words a question about each built-in tool may use, which its description (written for real
# models) does not list.
BUILTIN_KEYWORDS = {
    "calculator": "计算 算一下 数学 算术 math arithmetic calculate",
    "random_number": "随机数 随机 random",
    "current_time": "时间 几点 日期 星期 今天 现在 time date now today clock",
}
# A number a model would pass on: up to 100 digits (a longer run of digits is not one).
_NUMBER = re.compile(r"(?<!\d)-?\d{1,100}+(?:\.\d{1,100}+)?+(?!\d)")
_UNITS = frozenset("年月日天号点个岁次元")


class OfflineModel(BaseModel):
    """Answers MRKL prompts and native tool calls by lexical tool matching, a question over
    labelled documents (an answer chain's) with the sentence that best matches it and its
    citation (and an answer chain's request to rewrite its question with the question as
    asked), and a request for a typed result (`llms.generate_object`, its schema in
    `response_format` or in the prompted strategy's instructions) by filling the schema from
    the question as it fills a tool's arguments."""

    output_strategies: tuple[StrategyName, ...] = ("json_schema", "prompted")

    def __repr__(self) -> str:
        return "OfflineModel()"

    def _generate(self, request: ModelRequest) -> Message:
        messages, tools = request.messages, request.tools
        schema = _asked_schema(request)
        if tools:
            reply = _native_reply(messages, tools)
        elif schema is not None and not _prompt_tools(_last_user_text(messages)):
            reply = _object_reply(messages, schema)
        elif schema is None and _asks_rewrite(messages):
            reply = Message.assistant(_last_user_text(messages))
        elif schema is None and (answer := answer_from_documents(_last_user_text(messages))):
            reply = Message.assistant(answer)
        else:
            reply = Message.assistant(_mrkl_reply(messages, schema))
        if request.streaming_func is not None:
            stream_text(reply.content, request.streaming_func, 8)
        return reply


def _asked_schema(request: ModelRequest) -> dict[str, Any] | None:
    """The JSON schema a typed-result request asks for: in its `response_format`, or in the
    instructions of the prompted strategy (a system message); None for any other request."""
    response_format = request.options.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        return schema if isinstance(schema, dict) else None
    for message in request.messages:
        if message.role == "system" and SCHEMA_MARK in message.content:
            try:
                found = find_object(message.content.split(SCHEMA_MARK, 1)[1])
            except ValueError:
                return None
            return found if isinstance(found, dict) else None
    return None


def _object_reply(messages: Sequence[Message], schema: dict[str, Any]) -> Message:
    """The JSON object a model would fill `schema` with from the question."""
    question = _last_user_text(messages)
    return Message.assistant(_filled(question, schema, find_expression(question)))


def _filled(text: str, schema: dict[str, Any], expression: str | None = None) -> str:
    """The JSON object a model would fill `schema` with from `text` (its text field with
    `expression` instead, when the question asks for a calculation)."""
    named = _Choice(str(schema.get("title") or "result"), {}, expression)
    return json.dumps(_arguments(text, named, schema), ensure_ascii=False)


_REWRITE_REQUEST = "Rewrite the user's last question"
"""How an answer chain's system message asks for its question rewritten to stand alone from
the conversation before it (`chains.answer_chain` given a history)."""


def _asks_rewrite(messages: Sequence[Message]) -> bool:
    """Whether `messages` ask for a question rewritten from a conversation: this model, which
    cannot rewrite, then gives the question back as it was asked."""
    return (
        bool(messages)
        and messages[0].role == "system"
        and (messages[0].content.startswith(_REWRITE_REQUEST))
    )


def _last_user_text(messages: Sequence[Message]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            return message.content
    return ""


def _between(text: str, start: str, end: str) -> str | None:
    """The text after the last `start`, up to the next `end` (or the end of text)."""
    index = text.rfind(start)
    if index < 0:
        return None
    rest = text[index + len(start) :]
    stop = rest.find(end)
    return (rest if stop < 0 else rest[:stop]).strip()


@dataclass(slots=True, frozen=True)
class _Choice:
    """The tool to call, the tokens of the words that speak of it (left out of its argument),
    and the arithmetic expression to give it if it is a calculator."""

    name: str
    topic: dict[str, float]
    expression: str | None


def _choose(question: str, candidates: Sequence[tuple[str, str]]) -> _Choice | None:
    """The tool that best matches the question (by BM25, as `tools.ToolRetriever` chooses),
    or None when none shares a word with it. The first candidate wins a tie.

    An arithmetic expression in the question counts as a word about math, worth
    `EXPRESSION_WEIGHT`: enough to pick a calculator when nothing else is asked for, not to
    outweigh the words of another tool ("1-6 的随机数" asks for a random number).
    """
    described = tuple(
        (name, f"{description} {BUILTIN_KEYWORDS.get(name, '')}")
        for name, description in candidates
    )
    expression = find_expression(question)
    wanted = tokens(question)
    if expression is not None:
        wanted[EXPRESSION_TERM] = EXPRESSION_WEIGHT
    found = _index(described).search(wanted, 1)
    if not found:
        return None
    position = found[0][0]
    name, description = candidates[position]
    is_calculator = expression is not None and _does_math(terms(" ".join(described[position])))
    # The words to leave out of the argument: the tool's name, the first sentence of its
    # description and its keywords; examples further on ("such as Asia/Shanghai") are not.
    summary = re.split(r"[.。]\s", description, maxsplit=1)[0]
    topic = tokens(f"{name} {summary} {BUILTIN_KEYWORDS.get(name, '')}")
    return _Choice(name, topic, expression if is_calculator else None)


@functools.lru_cache(maxsize=16)
def _index(described: tuple[tuple[str, str], ...]) -> LexicalIndex[int]:
    """The index of the (name, description) candidates, by position; a prompt's tools are the
    same from one step to the next, so it is built once for them."""
    index = LexicalIndex[int]()
    for position, (name, description) in enumerate(described):
        document = list(terms(f"{name} {description}"))  # "random_number" gives its words
        if _does_math(document):
            document.append(EXPRESSION_TERM)
        index.add(position, document)
    return index


def _does_math(document: Iterable[str]) -> bool:
    """Whether a tool whose terms are `document` does arithmetic."""
    return not MATH_TOKENS.isdisjoint(document)


def _text_argument(question: str, choice: _Choice) -> str:
    return choice.expression or residual(question, choice.topic)


def _prompt_tools(prompt: str) -> list[tuple[str, str]]:
    """(name, description) pairs of the tools a MRKL prompt lists as `name: description`."""
    listed: set[str] = set()
    for line in prompt.splitlines():
        open_at = line.find("[")
        close_at = line.rfind("]")
        if 0 <= open_at < close_at:
            listed.update(name.strip() for name in line[open_at + 1 : close_at].split(","))
    found: list[tuple[str, str]] = []
    for line in prompt.splitlines():
        name, sep, description = line.partition(": ")
        if sep and name.strip() in listed:
            found.append((name.strip(), description.strip()))
    return found


def _mrkl_reply(messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
    """The next MRKL step; its final answer fills `schema` (from what the tool returned, or
    the question) when the agent's typed answer asks for an object of one."""
    prompt = _last_user_text(messages)
    # The format instructions show a Question and an Observation too: look past them.
    asked_at = max(prompt.rfind("Question:"), 0)
    # Without a "Question:" line there is no telling the question from the instructions.
    question = _between(prompt, "Question:", "\nThought:") or ""
    observation = _between(prompt[asked_at:], "\nObservation:", "\nThought:")
    if observation is not None:
        answer = observation if schema is None else _filled(observation, schema)
        return f" I now know the final answer.\nFinal Answer: {answer}"
    choice = _choose(question, _prompt_tools(prompt)) if question else None
    if choice is None:
        answer = (
            "The offline model can only answer by calling a tool, and none matches this question."
            if schema is None
            else _filled(question, schema)
        )
        return f" None of the tools matches this question.\nFinal Answer: {answer}"
    tool_input = _text_argument(question, choice)
    return f" I should use {choice.name}.\nAction: {choice.name}\nAction Input: {tool_input}"


def _native_reply(messages: Sequence[Message], tools: Sequence[ToolInfo]) -> Message:
    """A call of the tool that matches the question; once a tool answered, the answer: what it
    returned, or a call of the final-answer tool (an agent's typed answer) filled from it."""
    final = next((tool for tool in tools if tool.name == FINAL_ANSWER_TOOL), None)
    question = _last_user_text(messages)
    if messages and messages[-1].role == "tool":
        result = messages[-1].content
        return Message.assistant(result) if final is None else _answer_call(final, result)
    choice = _choose(question, [(t.name, t.description) for t in tools if t is not final])
    if choice is None:
        if final is not None:
            return _answer_call(final, question)
        return Message.assistant("The offline model found no tool matching this question.")
    info = next(t for t in tools if t.name == choice.name)
    arguments = _arguments(question, choice, info.parameters)
    call = ToolCall(
        "call_offline_0", FunctionCall(choice.name, json.dumps(arguments, ensure_ascii=False))
    )
    return Message.assistant("", [call])


def _answer_call(final: ToolInfo, text: str) -> Message:
    """A call of the final-answer tool `final`, its arguments filled from `text`."""
    answer = FunctionCall(final.name, _filled(text, final.parameters))
    return Message.assistant("", [ToolCall("call_offline_answer", answer)])


def _arguments(question: str, choice: _Choice, parameters: dict[str, Any]) -> dict[str, object]:
    """The arguments a model would send: numbers in the question for number parameters, in
    order; a choice the question names for an enum; what is left of the question (or the
    expression, for a calculator) for the text parameter (see `_text_field`). Parameters the
    question gives nothing for are left out, so their defaults apply."""
    properties: dict[str, Any] = parameters.get("properties") or {}
    arguments: dict[str, object] = {}
    numbers = list(_NUMBER.finditer(question))
    rest = question
    for name, schema in properties.items():
        kind, choices = _kind(schema)
        if choices:
            for choice_value in choices:
                span = _named_at(question, str(choice_value))
                if span is not None:
                    arguments[name] = choice_value
                    rest = _blanked(rest, *span)
                    break
        elif kind in ("integer", "number"):
            found = next((n for n in numbers if kind == "number" or "." not in n.group()), None)
            if found is not None:
                numbers.remove(found)
                text = found.group()
                arguments[name] = float(text) if kind == "number" else int(text)
                # Blank the number and its unit, "2025 年", from what the text parameter gets.
                end = found.end() + (question[found.end() : found.end() + 1] in _UNITS)
                rest = _blanked(rest, found.start(), end)
    field = _text_field(parameters)
    # The names of the parameters filled are words of the question about them ("3 days").
    filled = replace(choice, topic={**choice.topic, **tokens(" ".join(arguments))})
    text = _text_argument(rest, filled)
    if field is not None and field not in arguments and text:
        arguments[field] = text
    return arguments


def _kind(schema: object) -> tuple[str | None, list[object]]:
    """A property's JSON type and enum choices, looking inside anyOf (Optional[T])."""
    options = (schema.get("anyOf") or [schema]) if isinstance(schema, dict) else []
    for option in options:
        if isinstance(option, dict) and option.get("type") != "null":
            return option.get("type"), list(option.get("enum") or ())
    return None, []


def _named_at(question: str, choice: str) -> tuple[int, int] | None:
    """Where the question names `choice`, as a whole word in any case; None if it does not."""
    if not choice:
        return None
    pattern = re.escape(choice)
    if choice.isascii():
        pattern = rf"(?<![A-Za-z0-9]){pattern}(?![A-Za-z0-9])"
    found = re.search(pattern, question, re.IGNORECASE)
    return None if found is None else found.span()


def _blanked(text: str, start: int, end: int) -> str:
    """`text` with `text[start:end]` replaced by spaces, so other positions keep their place."""
    return text[:start] + " " * (end - start) + text[end:]


def _text_field(parameters: dict[str, Any]) -> str | None:
    """The argument to put the text in: the only one, or the first required string."""
    properties: dict[str, Any] = parameters.get("properties") or {}
    if len(properties) == 1:
        return next(iter(properties))
    for name in parameters.get("required") or ():
        if _kind(properties.get(name) or {})[0] in ("string", None):
            return str(name)
    return None
