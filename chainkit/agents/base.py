"""BaseAgent: the planning every agent kind shares. A kind of agent is two methods: what to
send the model (`plan_request`) and what its reply decides (`read_reply`)."""

from __future__ import annotations

import copy
from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from chainkit._text import described, shorten
from chainkit.agents._constraint import refused
from chainkit.agents._tool_offer import ToolOffer
from chainkit.agents._typed_answer import TypedAnswer, final_call
from chainkit.agents.agent import Agent
from chainkit.agents.errors import AgentConfigError, AgentTypeError, NotFinishedError
from chainkit.callbacks import Handlers, Observed, guard
from chainkit.llms import Model, ModelStatusError, ObjectResult
from chainkit.schema import AgentAction, AgentFinish, AgentStep, Message, ToolInfo
from chainkit.tools import Tool, ToolConfigError, ToolRetriever, Toolset, ToolTypeError


def agent_toolset(tools: Iterable[Tool]) -> Toolset:
    """The agent's tools as a Toolset; raises, naming the tool, as a Toolset refuses them (as
    the agents' own errors), or when there is none."""
    try:
        toolset = Toolset(tools)
    except ToolTypeError as error:
        raise AgentTypeError(str(error)) from None
    except ToolConfigError as error:
        raise AgentConfigError(str(error)) from None
    if not len(toolset):
        raise AgentConfigError("an agent needs at least one tool")
    return toolset


def check_tools(tools: Sequence[Tool]) -> list[Tool]:
    """The tools as a list; raises, naming the tool, unless an agent can offer them: at least
    one, and a `tools.Toolset` of them."""
    return list(agent_toolset(tools))


def check_max_parallel_tools(value: object) -> None:
    """Raises unless `value`, how many of one plan's actions may run at once, is an int of
    at least 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise AgentTypeError(
            f"max_parallel_tools must be a whole number, 1 or more, got {described(value)}"
        )
    if value < 1:
        raise AgentConfigError(f"max_parallel_tools must be at least 1, got {value}")


@dataclass(slots=True, frozen=True)
class Constraint:
    """What constrains one reply on a server that constrains decoding: `value` (a grammar)
    sent in the request field `field`, a dotted name for a field inside another. A server
    that refuses it (`ModelStatusError.refuses`: a 400, 404, 422 or 500 naming it) makes the
    plan raise ConstraintRefusedError."""

    field: str
    value: Any

    def merged(self, extra_body: dict[str, Any] | None) -> dict[str, Any]:
        """`extra_body` (the caller's, left unchanged) with this constraint's field added;
        a dotted field is nested."""
        *outer, inner = self.field.split(".")
        fields: dict[str, Any] = {inner: self.value}
        for name in reversed(outer):
            fields = {name: fields}
        return {**extra_body, **fields} if extra_body else fields


@dataclass(slots=True)
class PlanRequest:
    """What an agent asks its model for, for one plan: the `messages`; the `tools` offered
    natively (`tools=`, replacing any the caller gave); the `stop` words, unless the caller
    gives its own; the `constraint` on the reply (a grammar in a request field, added to the
    caller's `extra_body`) when the agent constrains decoding."""

    messages: list[Message]
    tools: Sequence[ToolInfo] | None = None
    stop: Sequence[str] | None = None
    constraint: Constraint | None = None


class BaseAgent(Observed, Agent):
    """The planning every agent kind shares: a model, a checked set of tools (a
    `tools.Toolset`), an output key, an optional handler for its own model calls, and an
    optional tool retriever choosing the tools each run offers the model, for its `input`.

    A kind of agent supplies two methods: `plan_request`, what to send the model, and
    `read_reply`, the decision its reply holds. From them BaseAgent plans, sync and async, the
    next step and the final answer asked for at a limit.

    An Executor with `output_type` plans with a copy of its agent that asks for a typed final
    answer (`answering`), for every kind alike: the kind's request gets the final-answer tool
    (when it offers tools natively) or the schema instructions, its final answer is read into
    the type (see `agents._typed_answer`), and the answer asked for at a limit is a
    `generate_object` call.
    """

    _answer: TypedAnswer | None = None

    def __init__(
        self,
        llm: Model,
        tools: Sequence[Tool],
        output_key: str = "output",
        callbacks: Handlers = None,
        tool_retriever: ToolRetriever | None = None,
    ) -> None:
        self.llm = llm
        self._toolset = agent_toolset(tools)
        self.output_key = output_key
        self.callbacks = callbacks
        self._tool_offer = (
            None if tool_retriever is None else ToolOffer(tool_retriever, self._toolset, "input")
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(llm={self.llm!r}, tools={self._toolset.names})"

    def answering(self, answer: TypedAnswer) -> BaseAgent:
        """A copy of this agent whose final answer is `answer`'s type."""
        typed = copy.copy(self)
        typed._answer = answer
        return typed

    @property
    def tools(self) -> list[Tool]:
        return list(self._toolset)

    @property
    def tool_retriever(self) -> ToolRetriever | None:
        """What chooses the tools each run offers; None when every run offers them all."""
        return None if self._tool_offer is None else self._tool_offer.retriever

    @property
    def input_keys(self) -> list[str]:
        """The inputs it needs: the question, under `input`."""
        return ["input"]

    @property
    def output_keys(self) -> list[str]:
        return [self.output_key]

    @abstractmethod
    def plan_request(
        self,
        steps: Sequence[AgentStep],
        inputs: Mapping[str, Any],
        offered: Sequence[Tool] | None,
        final: bool,
    ) -> PlanRequest:
        """What to send the model after `steps`, for `inputs`, offering the tools `offered`
        (None: all of the agent's). With `final`, a request for the final answer, asked for at
        a limit: a reply that calls a tool then raises NotFinishedError."""

    @abstractmethod
    def read_reply(self, reply: Message, final: bool) -> list[AgentAction] | AgentFinish:
        """The decision `reply` holds: the actions to run, or the final answer (always, with
        `final`: the reply has text then). Raises OutputParserError on a reply it cannot read."""

    def plan(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], **options: Any
    ) -> list[AgentAction] | AgentFinish:
        offer = self._tool_offer
        if offer is None and self._answer is None:  # nothing to select, nothing to add
            request = self.plan_request(steps, inputs, None, False)
            return self.read_reply(self._reply(request, options), False)
        offered = None if offer is None else offer.tools(steps, inputs, self.handler)
        request = self._asking(self.plan_request(steps, inputs, offered, False))
        decision = self._decision(self._reply(request, options))
        return decision if offer is None else offer.planned(decision, inputs, self.handler)

    async def aplan(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], **options: Any
    ) -> list[AgentAction] | AgentFinish:
        offer = self._tool_offer
        if offer is None and self._answer is None:  # nothing to select, nothing to add
            request = self.plan_request(steps, inputs, None, False)
            return self.read_reply(await self._areply(request, options), False)
        offered = None if offer is None else await offer.atools(steps, inputs, self.handler)
        request = self._asking(self.plan_request(steps, inputs, offered, False))
        decision = self._decision(await self._areply(request, options))
        return decision if offer is None else offer.planned(decision, inputs, self.handler)

    def plan_final(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], **options: Any
    ) -> AgentFinish:
        offer = self._tool_offer
        offered = None if offer is None else offer.tools(steps, inputs, self.handler)
        request = self.plan_request(steps, inputs, offered, True)
        if self._answer is not None:
            options = self._typed_final_options(options, request)
            finish = self._typed_final(self._answer.final(self.llm, request.messages, options))
        else:
            finish = self._final_answer(self._reply(request, options), steps)
        return finish if offer is None else offer.planned(finish, inputs, self.handler)

    async def aplan_final(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], **options: Any
    ) -> AgentFinish:
        offer = self._tool_offer
        offered = None if offer is None else await offer.atools(steps, inputs, self.handler)
        request = self.plan_request(steps, inputs, offered, True)
        if self._answer is not None:
            options = self._typed_final_options(options, request)
            result = await self._answer.afinal(self.llm, request.messages, options)
            finish = self._typed_final(result)
        else:
            finish = self._final_answer(await self._areply(request, options), steps)
        return finish if offer is None else offer.planned(finish, inputs, self.handler)

    def _reply(self, request: PlanRequest, options: dict[str, Any]) -> Message:
        """The model's reply to `request`, with the call's `options`."""
        try:
            return self.llm.generate(request.messages, **self._model_options(options, request))
        except ModelStatusError as error:
            _raise_if_refused(error, request)
            raise

    async def _areply(self, request: PlanRequest, options: dict[str, Any]) -> Message:
        """Async twin of `_reply`."""
        options = self._model_options(options, request)
        try:
            return await self.llm.agenerate(request.messages, **options)
        except ModelStatusError as error:
            _raise_if_refused(error, request)
            raise

    def _model_options(self, options: dict[str, Any], request: PlanRequest) -> dict[str, Any]:
        """The options of the agent's model call: the caller's (its plan's own **options, so
        changed in place), with the agent's own `callbacks` added to any the caller gave (the
        model's run hears both), the request's tools, and its stop words unless the caller
        gave some."""
        if self._handler is not None:  # the field, not the property: read on every step
            options["callbacks"] = guard(options.get("callbacks"), self._handler)
        if request.tools is not None:
            options["tools"] = request.tools
        if request.stop is not None and options.get("stop") is None:
            options["stop"] = request.stop
        if request.constraint is not None:
            options["extra_body"] = request.constraint.merged(options.get("extra_body"))
        return options

    def _typed_final_options(self, options: dict[str, Any], request: PlanRequest) -> dict[str, Any]:
        """The options of the typed answer asked for at a limit: the answer's strategy
        constrains the reply, not the agent's grammar (the two would clash)."""
        return self._model_options(options, replace(request, constraint=None))

    def _typed_final(self, result: ObjectResult[Any]) -> AgentFinish:
        return AgentFinish({self.output_key: result.value}, result.raw.content)

    def _asking(self, request: PlanRequest) -> PlanRequest:
        """`request` asking for the typed answer, when there is one: a request offering tools
        natively offers the final-answer tool too; any other gets the schema instructions."""
        answer = self._answer
        if answer is None:
            return request
        if request.tools is not None:
            return replace(request, tools=[*request.tools, answer.tool])
        return replace(request, messages=answer.instructed(request.messages))

    def _decision(self, reply: Message) -> list[AgentAction] | AgentFinish:
        """What `reply` decides; with a typed answer, a call of the final-answer tool ends
        the run (its other calls do not run) and a final answer is read into the type."""
        answer = self._answer
        if answer is None:
            return self.read_reply(reply, False)
        call = final_call(reply)
        if call is not None:
            value = answer.read_call(call, reply)
            return AgentFinish({self.output_key: value}, call.function.arguments)
        decision = self.read_reply(reply, False)
        if not isinstance(decision, AgentFinish):
            return decision
        value = answer.read(decision.return_values[self.output_key], reply)
        return AgentFinish({**decision.return_values, self.output_key: value}, decision.log)

    def _final_answer(self, reply: Message, steps: Sequence[AgentStep]) -> AgentFinish:
        """The final answer of a reply to a final-answer request. Raises NotFinishedError, with
        the steps taken, when the reply holds none: tool calls (which can no longer run) or no
        text (an empty answer would pass for a successful run)."""
        if reply.tool_calls:
            names = ", ".join(dict.fromkeys(call.function.name for call in reply.tool_calls))
            problem = f"called {shorten(names, 200)} instead"
        elif not reply.content.strip():
            problem = f"replied with {no_text(reply)}"
        else:
            finish = self.read_reply(reply, True)
            if isinstance(finish, AgentFinish):
                return finish
            problem = f"replied with what {type(self).__name__} reads as actions"
        raise NotFinishedError(f"asked for a final answer, the model {problem}", list(steps))


def _raise_if_refused(error: ModelStatusError, request: PlanRequest) -> None:
    """Raises ConstraintRefusedError, from `error`, when the server refused the request's
    constraint; returns for any other error, or a request without one."""
    if request.constraint is not None:
        refusal = refused(error, request.constraint.field)
        if refusal is not None:
            raise refusal from error


def no_text(reply: Message) -> str:
    """Describes a reply without text, with the reason the server gave for ending it."""
    reason = reply.response_meta.finish_reason if reply.response_meta is not None else None
    return f"no text (finish_reason {reason!r})" if reason else "no text"
