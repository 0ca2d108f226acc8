"""OneShotAgent: the MRKL / ReAct agent that reasons in text and names a tool per step."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chainkit.agents import mrkl_prompt
from chainkit.agents._constraint import check_answer_after, check_field
from chainkit.agents._mrkl_grammar import final_answer_grammar, step_grammar
from chainkit.agents._tool_examples import (
    DEFAULT_EXAMPLE_TOKENS,
    check_example_tokens,
    mrkl_examples,
)
from chainkit.agents.base import BaseAgent, Constraint, PlanRequest
from chainkit.agents.errors import (
    PARSE_ERROR_TOOL,
    AgentConfigError,
    AgentTypeError,
    OutputParserError,
)
from chainkit.agents.mrkl_parser import parse_mrkl_output
from chainkit.callbacks import Handlers
from chainkit.llms import Model
from chainkit.prompts import ChatPromptTemplate, PromptTemplate
from chainkit.schema import AgentAction, AgentFinish, AgenticMessage, AgentStep, Message
from chainkit.tools import Tool, ToolRetriever
from chainkit.tools.examples import action_input

DEFAULT_STOP = ("\nObservation:", "\n\tObservation:")
_TOOL_VARIABLES = ("tool_names", "tool_descriptions")
_PROMPT_PARTIALS = (*_TOOL_VARIABLES, "agent_scratchpad")


def create_mrkl_prompt(
    tools: Sequence[Tool],
    prefix: str = mrkl_prompt.PREFIX,
    format_instructions: str = mrkl_prompt.FORMAT_INSTRUCTIONS,
    suffix: str = mrkl_prompt.SUFFIX,
    *,
    example_tokens: int = DEFAULT_EXAMPLE_TOKENS,
) -> PromptTemplate:
    """The MRKL prompt with the tool names and descriptions filled in, the descriptions
    followed by the tools' examples that fit in `example_tokens` (see OneShotAgent)."""
    return PromptTemplate(
        "\n\n".join((prefix, format_instructions, suffix)),
        partial_variables=_tool_values(
            tools, _TOOL_VARIABLES, check_example_tokens(example_tokens)
        ),
    )


def _tool_values(
    tools: Sequence[Tool], wanted: Sequence[str], example_tokens: int
) -> dict[str, str]:
    """The {tool_names} and {tool_descriptions} values, for those of them a prompt uses; the
    descriptions end with the tools' examples that fit in `example_tokens`."""
    values = {}
    if "tool_names" in wanted:
        values["tool_names"] = ", ".join(tool.name for tool in tools)
    if "tool_descriptions" in wanted:
        described = "\n".join(t.prompt_description() for t in tools)
        values["tool_descriptions"] = described + mrkl_examples(tools, example_tokens)
    return values


def _query_key(input_keys: Sequence[str]) -> str:
    """The input a tool retriever selects tools for: `input`, or the prompt's only input."""
    if "input" in input_keys:
        return "input"
    if len(input_keys) == 1:
        return input_keys[0]
    raise AgentConfigError(
        f"with a tool_retriever, the prompt needs an {{input}} variable (the text tools are "
        f"selected for), or a single input; it has {input_keys}"
    )


def _check_mrkl_name(name: str) -> None:
    """Raises unless `name` survives the MRKL format: listed in the prompt among the others,
    written by the model after `Action:`, and read back by the parser unchanged."""
    if "," in name:
        raise AgentConfigError(
            f"tool name {name!r} has a comma; the MRKL prompt lists tool names separated by "
            "commas, so the model would read it as several tools"
        )
    try:
        read_back = parse_mrkl_output(f"Action: {name}\nAction Input: x")
    except OutputParserError:
        read_back = None
    if not isinstance(read_back, AgentAction) or read_back.tool != name:
        found = read_back.tool if isinstance(read_back, AgentAction) else None
        raise AgentConfigError(
            f"tool name {name!r} cannot be carried by the MRKL format: 'Action: {name}' reads "
            f"back as {found!r}. Avoid enclosing quotes or asterisks and the words "
            "'Action Input:'"
        )


def _check_mrkl_examples(tool: Tool) -> None:
    """Raises unless each of the tool's examples survives the MRKL format: its Action Input,
    read back by the parser, is the input the tool gets (the parser drops enclosing spaces
    and quotes, so an example showing them would teach the model what it does not do)."""
    for index, example in enumerate(tool.examples):
        written = action_input(tool, example)
        try:
            read = parse_mrkl_output(f"Action: {tool.name}\nAction Input: {written}")
        except OutputParserError:
            read = None
        found = read.tool_input if isinstance(read, AgentAction) else None
        if found != written:
            raise AgentConfigError(
                f"tool {tool.name!r}: example {index}'s input {written!r:.100} reads back from a "
                f"MRKL reply as {found!r:.100}; leave out spaces and quotes at its ends"
            )


def mrkl_scratchpad(steps: Sequence[AgentStep]) -> str:
    """The steps so far, as the model wrote them, each followed by its observation."""
    return "".join([f"{s.action.log}\nObservation: {s.observation}\nThought:" for s in steps])


def _check_no_conversation(inputs: Mapping[str, Any]) -> None:
    """Raises for a list of messages given to a text prompt, which would paste its repr."""
    for key, value in inputs.items():
        if isinstance(value, list | tuple) and (
            not value or any(isinstance(item, Message | AgenticMessage) for item in value)
        ):
            raise AgentTypeError(
                f"OneShotAgent's prompt is text, but input {key!r} is a {type(value).__name__} "
                "of messages, which it would show as a Python repr; use "
                f"ConversationBuffer(return_messages=False) for a text history, or a "
                f"ChatPromptTemplate with MessagesPlaceholder({key!r})"
            )


class OneShotAgent(BaseAgent):
    """Builds the MRKL prompt from its tools, calls the model with the stop words
    "\\nObservation:" and "\\n\\tObservation:" (a `stop` given by the caller replaces them),
    and parses the reply into an action or a final answer.

    With a `tool_retriever`, the prompt of each run lists only the tools selected for the
    run's `input` (or the prompt's only input), and those the model names later.

    With `constrain`, the name of the request field a server takes a GBNF grammar in
    ('grammar' for llama.cpp's server, 'structured_outputs.grammar' for vLLM), each request
    carries the grammar of the next step, so every reply parses: a one-line thought, then
    `Action:` one of the offered tools and an `Action Input:` this tool was not given before
    in the run, or `Final Answer:`. After `answer_after` tool calls (default 1) only the final
    answer is allowed; a final answer given right after a tool's result begins with it, as
    does the one asked for at a limit (`early_stopping_method="generate"`). A server that
    refuses the field raises ConstraintRefusedError.

    The tools' examples (`Tool.examples`) follow their descriptions as worked MRKL steps
    (Thought, Action, Action Input, and the Observation and Final Answer an example gives),
    as many as fit in `example_tokens` prompt tokens by the project's estimate (a quarter of
    the characters): each tool's first example in tool order, then each one's second, and so
    on; the first that does not fit and all after it are left out whole. Only the offered
    tools' examples are shown: with a `tool_retriever`, the chosen tools'. 0 shows none.
    """

    def __init__(
        self,
        llm: Model,
        tools: Sequence[Tool],
        *,
        prefix: str | None = None,
        format_instructions: str | None = None,
        suffix: str | None = None,
        prompt: PromptTemplate | ChatPromptTemplate | None = None,
        output_key: str = "output",
        callbacks: Handlers = None,
        tool_retriever: ToolRetriever | None = None,
        constrain: str | None = None,
        answer_after: int = 1,
        example_tokens: int = DEFAULT_EXAMPLE_TOKENS,
    ) -> None:
        super().__init__(llm, tools, output_key, callbacks, tool_retriever)
        self.example_tokens = check_example_tokens(example_tokens)
        for tool in self._toolset:
            _check_mrkl_name(tool.name)
            _check_mrkl_examples(tool)
        self.constrain = check_field(constrain)
        self.answer_after = check_answer_after(answer_after)
        if prompt is None:
            parts = (
                prefix if prefix is not None else mrkl_prompt.PREFIX,
                format_instructions
                if format_instructions is not None
                else mrkl_prompt.FORMAT_INSTRUCTIONS,
                suffix if suffix is not None else mrkl_prompt.SUFFIX,
            )
            # With a retriever the tools differ from run to run: they are filled in per run.
            prompt = (
                create_mrkl_prompt(self.tools, *parts, example_tokens=self.example_tokens)
                if tool_retriever is None
                else PromptTemplate("\n\n".join(parts))
            )
        elif prefix is not None or format_instructions is not None or suffix is not None:
            raise AgentConfigError(
                "give either prompt or prefix/format_instructions/suffix, not both"
            )
        elif tool_retriever is None:
            values = _tool_values(self.tools, prompt.input_variables, self.example_tokens)
            prompt = prompt.partial(**values)
        if "agent_scratchpad" not in prompt.input_variables:
            raise AgentConfigError("the MRKL prompt needs an {agent_scratchpad} variable")
        self.prompt: PromptTemplate | ChatPromptTemplate = prompt
        self._input_keys = [v for v in prompt.input_variables if v not in _PROMPT_PARTIALS]
        self._tool_variables = [v for v in prompt.input_variables if v in _TOOL_VARIABLES]
        if self._tool_offer is not None:
            self._tool_offer.query_key = _query_key(self._input_keys)

    @property
    def input_keys(self) -> list[str]:
        return self._input_keys

    def plan_request(
        self,
        steps: Sequence[AgentStep],
        inputs: Mapping[str, Any],
        offered: Sequence[Tool] | None,
        final: bool,
    ) -> PlanRequest:
        """The prompt with the steps so far as its scratchpad, and the tools `offered` in it
        when a retriever chose them."""
        if not steps:  # a run's inputs are fixed: checked at its first plan
            self._check_inputs(inputs)
        scratchpad = mrkl_scratchpad(steps) if steps else ""
        if final:
            scratchpad += mrkl_prompt.FINAL_ANSWER_REQUEST
        if offered is not None:
            values = _tool_values(offered, self._tool_variables, self.example_tokens)
            inputs = {**inputs, **values}
        messages = self.prompt.format_messages(**inputs, agent_scratchpad=scratchpad)
        if self.constrain is None:
            # Positional (no tools, then the stop words): a keyword argument to a class costs a
            # third of making the request, on every step.
            return PlanRequest(messages, None, DEFAULT_STOP)
        constraint = Constraint(self.constrain, self._grammar(steps, offered, final))
        return PlanRequest(messages, stop=DEFAULT_STOP, constraint=constraint)

    def _grammar(
        self, steps: Sequence[AgentStep], offered: Sequence[Tool] | None, final: bool
    ) -> str:
        """The grammar of the reply to the next request (see `_mrkl_grammar`)."""
        last = steps[-1] if steps else None
        answered = (
            last.observation
            if last is not None and self._toolset.find(last.action.tool) is not None
            else None
        )
        if final:
            return final_answer_grammar(answered)
        taken: dict[str, list[str]] = {}
        for step in steps:
            if step.action.tool != PARSE_ERROR_TOOL:
                taken.setdefault(step.action.tool, []).append(str(step.action.tool_input))
        names = self._toolset.names if offered is None else [tool.name for tool in offered]
        answer_now = sum(map(len, taken.values())) >= self.answer_after
        return step_grammar(names, taken, answered, answer_now)

    def read_reply(self, reply: Message, final: bool) -> list[AgentAction] | AgentFinish:
        if final:
            return self._final(reply.content)
        decision = parse_mrkl_output(reply.content)
        return self._final(decision) if isinstance(decision, AgentFinish) else [decision]

    def _check_inputs(self, inputs: Mapping[str, Any]) -> None:
        if "agent_scratchpad" in inputs:
            raise AgentConfigError(
                "'agent_scratchpad' is filled in by the agent; it cannot be an input"
            )
        if isinstance(self.prompt, PromptTemplate):
            _check_no_conversation(inputs)

    def _final(self, reply: str | AgentFinish) -> AgentFinish:
        """A final answer under `output_key`; a reply that is not one is taken whole."""
        if isinstance(reply, str):
            try:
                parsed = parse_mrkl_output(reply)
            except ValueError:
                parsed = None
            if not isinstance(parsed, AgentFinish):
                return AgentFinish({self.output_key: reply.strip()}, reply)
            reply = parsed
        if self.output_key != "output":
            return AgentFinish({self.output_key: reply.return_values["output"]}, reply.log)
        return reply
