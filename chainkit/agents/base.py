"""What the built-in agents share: a model, a checked list of tools, an output key, an
optional handler for their own model calls, and an optional tool retriever choosing the tools
each run offers the model."""

from __future__ import annotations

import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from chainkit._text import described, shorten
from chainkit.agents.agent import Agent
from chainkit.agents.errors import AgentConfigError, AgentTypeError, NotFinishedError
from chainkit.callbacks import CombiningHandler, Handlers, Observed, guard
from chainkit.callbacks.run import current_run, enter
from chainkit.llms import Model
from chainkit.schema import AgentAction, AgentFinish, AgentStep, Message
from chainkit.tools import Tool, ToolRetriever

Decision = TypeVar("Decision", bound=list[AgentAction] | AgentFinish)


def check_tools(tools: Sequence[Tool]) -> list[Tool]:
    """The tools as a list; raises, naming the tool, unless each is a Tool with a name and a
    description and no two names are equal once case-folded (the Executor finds a tool by its
    case-folded name when the model's casing is off).

    A name must be text a model can write back: no control characters (newlines, tabs), no
    space at either end. A Tool subclass must implement `call` or `acall`.
    """
    if isinstance(tools, Tool) or not isinstance(tools, Sequence):
        raise AgentTypeError(f"tools must be a list of Tool, got {type(tools).__name__}")
    if not tools:
        raise AgentConfigError("an agent needs at least one tool")
    seen: dict[str, str] = {}
    for tool in tools:
        if not isinstance(tool, Tool):
            hint = "; make a function a tool with @tools.tool" if callable(tool) else ""
            raise AgentTypeError(
                f"tools must be Tool instances, got {type(tool).__name__}: {tool!r}{hint}"
            )
        name, description = tool.name, tool.description
        if not isinstance(name, str) or not isinstance(description, str):
            raise AgentTypeError(
                f"tool {tool!r}: name and description must be str, got "
                f"{type(name).__name__} and {type(description).__name__}"
            )
        if not name.strip():
            raise AgentConfigError(f"tool {tool!r} has an empty name")
        if name != name.strip() or any(unicodedata.category(c)[0] == "C" for c in name):
            raise AgentConfigError(
                f"tool name {name!r} has a space at an end or a control character (newline, "
                "tab...); a model could not write it back. Use a name like 'get_weather'"
            )
        if not description.strip():
            raise AgentConfigError(
                f"tool {name!r} has no description; the model reads it to choose its tools. "
                "Set `description` (for @tools.tool, write a docstring)"
            )
        _check_callable(tool)
        folded = name.casefold()
        if folded in seen:
            same = "appears twice" if seen[folded] == name else f"and {seen[folded]!r} clash"
            raise AgentConfigError(
                f"tool names must be unique, ignoring case; {name!r} {same}. Rename one of them"
            )
        seen[folded] = name
    return list(tools)


def check_max_parallel_tools(value: object) -> None:
    """Raises unless `value`, how many of one plan's actions may run at once, is an int of
    at least 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise AgentTypeError(
            f"max_parallel_tools must be a whole number, 1 or more, got {described(value)}"
        )
    if value < 1:
        raise AgentConfigError(f"max_parallel_tools must be at least 1, got {value}")


_LANGCHAIN_METHODS = {"_run": "call", "run": "call", "_arun": "acall", "arun": "acall"}
"""Methods LangChain's tools implement, and the method of a chainkit Tool doing their work."""


def _check_callable(tool: Tool) -> None:
    """Raises, naming the tool, unless it implements `call` or `acall`: Tool's own would fail
    at the first call, in the middle of a run."""
    kind = type(tool)
    if kind.call is not Tool.call or kind.acall is not Tool.acall:
        return
    if {"call", "acall"} & getattr(tool, "__dict__", {}).keys():
        return  # set on the instance
    found = [name for name in _LANGCHAIN_METHODS if callable(getattr(tool, name, None))]
    if found:
        hint = f"define {_LANGCHAIN_METHODS[found[0]]}(self, input) instead of {found[0]}"
    else:
        hint = "define call(self, input) -> str (or async acall(self, input) -> str)"
    raise AgentTypeError(
        f"tool {tool.name!r} ({kind.__name__}) implements neither call nor acall: {hint}, or "
        "make a function a tool with @tools.tool"
    )


class BaseAgent(Observed, Agent):
    """Holds what OneShotAgent and ToolCallingAgent have in common; the planning is theirs.

    With a `tool_retriever`, a run offers the model only the tools it selects for the run's
    query (the input under `_query_key`): selected once, when the run's first plan starts,
    and reported as a retrieval to the callbacks. A registered tool the model names that was
    not offered still runs (the Executor finds every tool of the agent), and is offered from
    then on, reported as a retrieval of its own.
    """

    _query_key = "input"

    def __init__(
        self,
        llm: Model,
        tools: Sequence[Tool],
        output_key: str,
        callbacks: Handlers,
        tool_retriever: ToolRetriever | None = None,
    ) -> None:
        self.llm = llm
        self._tools = check_tools(tools)
        self.output_key = output_key
        self.callbacks = callbacks
        self.tool_retriever = _check_retriever(tool_retriever, self._tools)
        self._tools_folded = {tool.name.casefold(): tool for tool in self._tools}
        self._offers = _RunOffers()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(llm={self.llm!r}, tools={[t.name for t in self._tools]})"

    @property
    def tools(self) -> list[Tool]:
        return self._tools

    @property
    def output_keys(self) -> list[str]:
        return [self.output_key]

    def _model_options(
        self, options: dict[str, Any], default_stop: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """The options of the agent's model call: the caller's (its plan's own **options, so
        changed in place), with the agent's own `callbacks` added to any the caller gave (the
        model's run hears both), and `default_stop` as `stop` unless the caller gave one."""
        if self._handler is not None:  # the field, not the property: read on every step
            options["callbacks"] = guard(options.get("callbacks"), self._handler)
        if default_stop is not None and options.get("stop") is None:
            options["stop"] = default_stop
        return options

    def _offered(self, steps: Sequence[AgentStep], inputs: Mapping[str, Any]) -> list[Tool] | None:
        """The tools this run offers the model; None without a tool_retriever (all of them)."""
        retriever = self.tool_retriever
        if retriever is None:
            return None
        query = self._query(inputs)
        offer = self._offers.get(inputs, query) if steps else None
        if offer is None:
            with _reporting_retrieval(self.handler, query) as found:
                found.extend(self._registered(retriever.select(query)))
            offer = self._offers.start(inputs, query, found)
        return offer

    async def _aoffered(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any]
    ) -> list[Tool] | None:
        """`_offered` for async runs: an embedder's async path is awaited."""
        retriever = self.tool_retriever
        if retriever is None:
            return None
        query = self._query(inputs)
        offer = self._offers.get(inputs, query) if steps else None
        if offer is None:
            with _reporting_retrieval(self.handler, query) as found:
                found.extend(self._registered(await retriever.aselect(query)))
            offer = self._offers.start(inputs, query, found)
        return offer

    def _planned(self, decision: Decision, inputs: Mapping[str, Any]) -> Decision:
        """`decision`, once the run's offer knows it: a finished run's offer is forgotten, and
        each registered tool the model named without being offered it is offered from now on
        (the second chance: it runs all the same)."""
        if self.tool_retriever is None:
            return decision
        if isinstance(decision, AgentFinish):
            self._offers.end(inputs)
            return decision
        offer = self._offers.get(inputs, self._query(inputs))
        if offer is not None:
            for action in decision:
                tool = self._tools_folded.get(action.tool.casefold())
                if tool is not None and all(tool is not offered for offered in offer):
                    with _reporting_retrieval(self.handler, action.tool) as found:
                        found.append(tool)
                    offer.append(tool)
        return decision

    def _query(self, inputs: Mapping[str, Any]) -> str:
        """The text tools are selected for: the input under `_query_key`."""
        return str(inputs.get(self._query_key, ""))  # a missing input is the prompt's to name

    def _registered(self, selected: Sequence[Tool]) -> list[Tool]:
        """The agent's own tools among those a retriever selected (by name): one added to the
        retriever since the agent was built is not the agent's to offer."""
        found = (self._tools_folded.get(tool.name.casefold()) for tool in selected)
        return [tool for tool in found if tool is not None]


def _check_retriever(
    retriever: ToolRetriever | None, tools: Sequence[Tool]
) -> ToolRetriever | None:
    """Raises unless the retriever selects among exactly the agent's tools (by name)."""
    if retriever is None:
        return None
    if not isinstance(retriever, ToolRetriever):
        raise AgentTypeError(
            f"tool_retriever must be a tools.ToolRetriever, got {type(retriever).__name__}"
        )
    agent_names = {tool.name for tool in tools}
    retriever_names = {tool.name for tool in retriever.tools}
    if agent_names != retriever_names:
        problems = []
        if agent_names - retriever_names:
            unknown = ", ".join(sorted(agent_names - retriever_names))
            problems.append(f"the retriever lacks {shorten(unknown, 200)}")
        if retriever_names - agent_names:
            extra = ", ".join(sorted(retriever_names - agent_names))
            problems.append(f"the agent lacks {shorten(extra, 200)}")
        raise AgentConfigError(
            "tool_retriever must select among the agent's own tools: "
            f"{'; '.join(problems)}. Build it with tools.ToolRetriever(tools) on the same list"
        )
    return retriever


@contextmanager
def _reporting_retrieval(own: CombiningHandler | None, query: str) -> Iterator[list[Tool]]:
    """A "retriever" run selecting tools for `query`: its start, then, once the block has put
    the tools selected in the list it is given, its end with them (or its error). The one
    place the agents report retrievals; `own` is the agent's handler."""
    with enter("retriever", query, own) as run:
        if run.handler is not None:
            run.handler.handle_retriever_start(query)
        found: list[Tool] = []
        yield found
        run.end(list(found))


class _RunOffers:
    """The tools offered in each run in progress, by run: the id of the current run (the
    Executor's), or, for an agent planning outside any run, the id of the inputs object it is
    given for every plan. A run's first plan (no steps yet) always selects afresh, and a record
    is found only for the query it was selected for. A run that does not end with the agent's
    final answer (an error, a limit, a tool returning directly) leaves its record behind: only
    the latest `LIMIT` are kept, and a run whose record was dropped selects again.

    A copy of an agent starts with no record: `__reduce__` makes copies and pickles fresh."""

    LIMIT = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offers: OrderedDict[str | int, tuple[int, list[Tool]]] = OrderedDict()

    def __reduce__(self) -> tuple[type[_RunOffers], tuple[()]]:
        return (type(self), ())

    def __len__(self) -> int:
        return len(self._offers)

    def get(self, inputs: Mapping[str, Any], query: str) -> list[Tool] | None:
        with self._lock:
            record = self._offers.get(_run_key(inputs))
        return record[1] if record is not None and record[0] == hash(query) else None

    def start(self, inputs: Mapping[str, Any], query: str, tools: list[Tool]) -> list[Tool]:
        key = _run_key(inputs)
        with self._lock:
            self._offers[key] = (hash(query), tools)
            self._offers.move_to_end(key)
            while len(self._offers) > self.LIMIT:
                self._offers.popitem(last=False)
        return tools

    def end(self, inputs: Mapping[str, Any]) -> None:
        with self._lock:
            self._offers.pop(_run_key(inputs), None)


def _run_key(inputs: Mapping[str, Any]) -> str | int:
    run = current_run()
    return id(inputs) if run is None else run.id


def no_text(reply: Message) -> str:
    """Describes a reply without text, with the reason the server gave for ending it."""
    reason = reply.response_meta.finish_reason if reply.response_meta is not None else None
    return f"no text (finish_reason {reason!r})" if reason else "no text"


def final_answer_text(reply: Message, steps: Sequence[AgentStep]) -> str:
    """The text of the reply to a final-answer request. Raises NotFinishedError, with the
    steps taken, when the reply holds no answer: tool calls (which can no longer run) or no
    text; an empty answer would pass for a successful run."""
    if reply.tool_calls:
        names = ", ".join(dict.fromkeys(call.function.name for call in reply.tool_calls))
        problem = f"called {shorten(names, 200)} instead"
    elif not reply.content.strip():
        problem = f"replied with {no_text(reply)}"
    else:
        return reply.content
    raise NotFinishedError(f"asked for a final answer, the model {problem}", list(steps))
