"""ToolCallingAgent: uses the model's native tool calling, with parallel calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import count
from typing import Any

from chainkit.agents.base import BaseAgent
from chainkit.callbacks import Handlers
from chainkit.chains.options import model_options
from chainkit.llms import Model
from chainkit.schema import AgentAction, AgentFinish, AgentStep, Message
from chainkit.tools import Tool

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
    first reply that calls no tool.

    The conversation is a list of Message rebuilt from the steps: each assistant reply with its
    tool calls, then one tool message per call, in call order. A list of Message under
    `history_key` in the inputs (a ConversationBuffer with return_messages=True) comes first.
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
        callbacks_handler: Handlers = None,
    ) -> None:
        if max_parallel_tools < 1:
            raise ValueError(f"max_parallel_tools must be at least 1, got {max_parallel_tools}")
        super().__init__(llm, tools, output_key, callbacks_handler)
        self._tool_infos = [tool.info() for tool in self._tools]
        self.system_prompt = DEFAULT_SYSTEM_PROMPT if system_prompt is None else system_prompt
        self.max_parallel_tools = max_parallel_tools
        self.history_key = history_key

    @property
    def input_keys(self) -> list[str]:
        return ["input"]

    @property
    def optional_input_keys(self) -> list[str]:
        """Inputs read when present: the conversation history."""
        return [self.history_key]

    def plan(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], **options: Any
    ) -> list[AgentAction] | AgentFinish:
        messages = self.messages(steps, inputs)
        return self._decide(self.llm.generate(messages, **self._options(options, tools=True)))

    async def aplan(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], **options: Any
    ) -> list[AgentAction] | AgentFinish:
        messages = self.messages(steps, inputs)
        reply = await self.llm.agenerate(messages, **self._options(options, tools=True))
        return self._decide(reply)

    def plan_final(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], **options: Any
    ) -> AgentFinish:
        messages = [*self.messages(steps, inputs), Message.user(FINAL_ANSWER_REQUEST)]
        return self._finish(self.llm.generate(messages, **self._options(options, tools=False)))

    async def aplan_final(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], **options: Any
    ) -> AgentFinish:
        messages = [*self.messages(steps, inputs), Message.user(FINAL_ANSWER_REQUEST)]
        reply = await self.llm.agenerate(messages, **self._options(options, tools=False))
        return self._finish(reply)

    def messages(self, steps: Sequence[AgentStep], inputs: Mapping[str, Any]) -> list[Message]:
        """The conversation so far: system, history, question, then each reply and its results."""
        messages = [Message.system(self.system_prompt)] if self.system_prompt else []
        history = inputs.get(self.history_key)
        if isinstance(history, list):
            messages.extend(m for m in history if isinstance(m, Message))
        elif isinstance(history, str) and history:
            messages.append(Message.system(f"Conversation so far:\n{history}"))
        messages.append(Message.user(str(inputs["input"])))
        last_reply: Message | None = None
        for step in steps:
            action = step.action
            reply = action.message_log[0] if action.message_log else None
            if reply is not None and reply is not last_reply:
                messages.append(reply)
                last_reply = reply
            if action.tool_call_id is None:
                # A step without a native call (e.g. a parse error fed back): plain text.
                messages.append(Message.user(f"{action.tool}: {step.observation}"))
            else:
                messages.append(Message.tool(step.observation, action.tool_call_id, action.tool))
        return messages

    def _options(self, options: dict[str, Any], *, tools: bool) -> dict[str, Any]:
        options = model_options(options, self.callbacks)
        if tools:
            options["tools"] = self._tool_infos
        return options

    def _decide(self, reply: Message) -> list[AgentAction] | AgentFinish:
        if not reply.tool_calls:
            return self._finish(reply)
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

    def _finish(self, reply: Message) -> AgentFinish:
        return AgentFinish({self.output_key: reply.content}, reply.content)
