"""ToolCallingAgent: uses the model's native tool calling, with parallel calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import count
from typing import Any

from chainkit.agents._constraint import check_field
from chainkit.agents._json_step import read_json_step, step_prompt, step_schema_value
from chainkit.agents._tool_examples import (
    DEFAULT_EXAMPLE_TOKENS,
    check_example_tokens,
    with_examples,
)
from chainkit.agents.base import (
    BaseAgent,
    Constraint,
    PlanRequest,
    check_max_parallel_tools,
    no_text,
)
from chainkit.agents.errors import OutputParserError
from chainkit.callbacks import Handlers
from chainkit.llms import Model
from chainkit.prompts.placeholder import to_messages
from chainkit.schema import AgentAction, AgentFinish, AgentStep, Message, ToolInfo
from chainkit.tools import Tool, ToolRetriever

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant. Use the tools when they help answer the question; "
    "call several at once when they do not depend on each other."
)
FINAL_ANSWER_REQUEST = (
    "Stop calling tools now. Give your final answer based on the tool results above."
)


class ToolCallingAgent(BaseAgent):
    """Sends the tools' JSON schemas with every model call and runs every tool call the reply
    holds (up to `max_parallel_tools` at once, under the Executor). The run ends with the
    first reply that calls no tool; a reply with neither text nor a tool call is a parse
    error. The final answer asked for at a limit is offered no tools: a reply that still
    calls one, or has no text, raises NotFinishedError.

    The conversation is a list of Message rebuilt from the steps: each assistant reply with its
    tool calls, then one tool message per call, in call order. The history under
    `history_key` in the inputs comes first: text, or a conversation in any form
    `prompts.placeholder.to_messages` reads (Message, (role, content) pairs, dicts, …).

    With a `tool_retriever`, each run sends only the tools selected for its `input`, and
    those the model names later.

    With `constrain`, the request field a server takes a JSON schema in ("response_format"
    for OpenAI, vLLM and llama.cpp's `llama-server`, sent in OpenAI's `json_schema` form;
    "json_schema" for llama-server's own field, "structured_outputs.json" for vLLM: the
    schema itself), tools are not offered natively: a system message describes them, and
    each reply is constrained to one JSON object, `{"tool": <name>, "arguments": {...}}`
    (one call per step) or `{"answer": "..."}`; the answer asked for at a limit, to the
    answer alone. A server that refuses the field raises ConstraintRefusedError.

    The tools' examples (`Tool.examples`) are sent as the JSON arguments of each example
    call, one a line after "Example arguments:" at the end of the tool's description: the
    description is the field every OpenAI-compatible server hands to the model's chat
    template. As many fit as `example_tokens` allows, chosen as a OneShotAgent chooses them;
    only the offered tools' examples are sent.
    """

    def __init__(
        self,
        llm: Model,
        tools: Sequence[Tool],
        *,
        system_prompt: str | None = None,
        max_parallel_tools: int = 8,
        output_key: str = "output",
        history_key: str = "history",
        callbacks: Handlers = None,
        tool_retriever: ToolRetriever | None = None,
        constrain: str | None = None,
        example_tokens: int = DEFAULT_EXAMPLE_TOKENS,
    ) -> None:
        check_max_parallel_tools(max_parallel_tools)
        self.constrain = check_field(constrain)
        self.example_tokens = check_example_tokens(example_tokens)
        super().__init__(llm, tools, output_key, callbacks, tool_retriever)
        plain_infos = [tool.info() for tool in self._toolset]
        self._info_of = {info.name: info for info in plain_infos}
        self._tool_infos = with_examples(plain_infos, self.tools, self.example_tokens)
        self._with_examples = any(tool.examples for tool in self._toolset)
        self.system_prompt = DEFAULT_SYSTEM_PROMPT if system_prompt is None else system_prompt
        self.max_parallel_tools = max_parallel_tools
        self.history_key = history_key

    @property
    def optional_input_keys(self) -> list[str]:
        """Inputs read when present: the conversation history."""
        return [self.history_key]

    def plan_request(
        self,
        steps: Sequence[AgentStep],
        inputs: Mapping[str, Any],
        offered: Sequence[Tool] | None,
        final: bool,
    ) -> PlanRequest:
        messages = self.messages(steps, inputs)
        if final:  # offered no tools: it is to answer with what it has
            messages.append(Message.user(FINAL_ANSWER_REQUEST))
            infos: list[ToolInfo] = []
        elif offered is None:
            infos = self._tool_infos
        else:
            infos = [self._info_of[tool.name] for tool in offered]
            if self._with_examples:
                infos = with_examples(infos, offered, self.example_tokens)
        if self.constrain is not None:
            value = step_schema_value(self.constrain, infos)
            messages.insert(0, Message.system(step_prompt(infos)))
            return PlanRequest(messages, constraint=Constraint(self.constrain, value))
        # The tools positional, as a keyword argument to a class is dearer, on every step.
        return PlanRequest(messages) if final else PlanRequest(messages, infos)

    def read_reply(self, reply: Message, final: bool) -> list[AgentAction] | AgentFinish:
        if self.constrain is not None:
            return self._read_json(reply, final)
        return self._finish(reply.content) if final else self._decide(reply)

    def _read_json(self, reply: Message, final: bool) -> list[AgentAction] | AgentFinish:
        """The step of a reply constrained to JSON; at a limit, a reply that is no answer
        object is taken as the answer's text."""
        try:
            step = read_json_step(reply, self._toolset)
        except OutputParserError:
            if final:
                return self._finish(reply.content)
            raise
        if isinstance(step, AgentFinish):
            return self._finish(step.return_values["output"])
        return step

    def messages(self, steps: Sequence[AgentStep], inputs: Mapping[str, Any]) -> list[Message]:
        """The conversation so far: system, history, question, then each reply and its results."""
        messages = [Message.system(self.system_prompt)] if self.system_prompt else []
        history = inputs.get(self.history_key)
        if isinstance(history, str):
            if history:
                messages.append(Message.system(f"Conversation so far:\n{history}"))
        elif history is not None:
            messages.extend(to_messages(history, self.history_key))
        messages.append(Message.user(str(inputs["input"])))
        last_reply: Message | None = None
        for step in steps:
            action = step.action
            reply = action.message_log[0] if action.message_log else None
            # A reply's calls are consecutive steps, and the first of them opens its turn: a
            # model (a cache, a script) may return the very same reply object on a later turn.
            if reply is not None and (reply is not last_reply or _opens_turn(reply, action)):
                messages.append(reply)
                last_reply = reply
            if action.tool_call_id is None:
                # A step without a native call (e.g. a parse error fed back): plain text.
                messages.append(Message.user(f"{action.tool}: {step.observation}"))
            else:
                messages.append(Message.tool(step.observation, action.tool_call_id, action.tool))
        return messages

    def _decide(self, reply: Message) -> list[AgentAction] | AgentFinish:
        if not reply.tool_calls:
            if not reply.content.strip():
                raise OutputParserError(
                    f"Your reply had neither text nor a tool call ({no_text(reply)}). "
                    "Answer the question, or call one of the tools.",
                    reply.content,
                )
            return self._finish(reply.content)
        ids = [call.id for call in reply.tool_calls]
        if not all(ids) or len(set(ids)) < len(ids):
            # Some servers omit or repeat ids; each result must still point at its own call.
            taken = set(ids)
            calls = []
            for index, call in enumerate(reply.tool_calls):
                if not call.id or ids.index(call.id) != index:
                    fresh = next(f"call_{n}" for n in count(index) if f"call_{n}" not in taken)
                    taken.add(fresh)
                    call = replace(call, id=fresh)
                calls.append(call)
            reply = replace(reply, tool_calls=calls)
        log = [reply]
        return [
            AgentAction(
                call.function.name,
                call.function.arguments,
                reply.content,
                tool_call_id=call.id,
                message_log=log,
            )
            for call in reply.tool_calls
        ]

    def _finish(self, answer: str) -> AgentFinish:
        return AgentFinish({self.output_key: answer}, answer)


def _opens_turn(reply: Message, action: AgentAction) -> bool:
    """Whether `action` is the first call of `reply` (whose call ids `_decide` made unique)."""
    return bool(reply.tool_calls) and reply.tool_calls[0].id == action.tool_call_id
