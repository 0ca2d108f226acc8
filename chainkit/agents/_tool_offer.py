"""ToolOffer: which of an agent's tools each run offers the model, when a ToolRetriever
chooses them.

The tools are selected when a run's first plan starts, for the run's query, and that
selection is reported as a "retriever" run to the callbacks. At each later plan the retriever
selects again, by words alone (no embedding call), for what the run is doing: the model's
latest reply and the observation it brought. The best tool of that selection not offered yet
is offered from then on (one a step at most, so that the offer stays small), reported as a
retrieval of its own. A registered tool the model names that was not offered still runs (the
Executor finds every tool of the agent), and is offered from then on, reported too.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from chainkit._text import shorten
from chainkit.agents.errors import AgentConfigError, AgentTypeError
from chainkit.callbacks.combining import CombiningHandler
from chainkit.callbacks.run import current_run, retrieval
from chainkit.schema import AgentAction, AgentFinish, AgentStep
from chainkit.tools import Tool, ToolRetriever, Toolset

Decision = TypeVar("Decision", bound=list[AgentAction] | AgentFinish)


class ToolOffer:
    """The tools a `retriever` offers in each run of an agent holding `toolset`, selected for
    the input under `query_key`."""

    def __init__(self, retriever: ToolRetriever, toolset: Toolset, query_key: str) -> None:
        self.retriever = _checked(retriever, toolset)
        self._toolset = toolset
        self.query_key = query_key
        self._runs = _RunOffers()

    def __len__(self) -> int:
        """How many runs have an offer on record."""
        return len(self._runs)

    def tools(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], own: CombiningHandler | None
    ) -> list[Tool]:
        """The tools this run offers, selected at its first plan and grown by each step it
        takes (see the module); `own` is the agent's handler."""
        query = self._query(inputs)
        offer = self._runs.get(inputs, query) if steps else None
        if offer is None:
            with self._reporting(own, query) as found:
                found.extend(self._registered(self.retriever.select(query)))
            return self._runs.start(inputs, query, found)
        self._follow(offer, steps, inputs, own)
        return offer

    async def atools(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], own: CombiningHandler | None
    ) -> list[Tool]:
        """`tools` for async runs: an embedder's async path is awaited."""
        query = self._query(inputs)
        offer = self._runs.get(inputs, query) if steps else None
        if offer is None:
            with self._reporting(own, query) as found:
                found.extend(self._registered(await self.retriever.aselect(query)))
            return self._runs.start(inputs, query, found)
        self._follow(offer, steps, inputs, own)
        return offer

    def _follow(
        self,
        offer: list[Tool],
        steps: Sequence[AgentStep],
        inputs: Mapping[str, Any],
        own: CombiningHandler | None,
    ) -> None:
        """Offers from now on the best tool not offered yet that the words of the run's latest
        step select, once per step."""
        text = self._step_text(steps[-1]) if self._runs.follow(inputs, len(steps)) else None
        if text is None:
            return
        selected = self._registered(self.retriever.select_by_words(text))
        tool = next((tool for tool in selected if _not_in(tool, offer)), None)
        if tool is not None:
            with self._reporting(own, text) as found:
                found.append(tool)
            offer.append(tool)

    def planned(
        self, decision: Decision, inputs: Mapping[str, Any], own: CombiningHandler | None
    ) -> Decision:
        """`decision`, once the run's offer knows it: a finished run's offer is forgotten, and
        each registered tool the model named without being offered it is offered from now on
        (the second chance: it runs all the same)."""
        if isinstance(decision, AgentFinish):
            self._runs.end(inputs)
            return decision
        offer = self._runs.get(inputs, self._query(inputs))
        if offer is not None:
            for action in decision:
                tool = self._toolset.find(action.tool)
                if tool is not None and _not_in(tool, offer):
                    with self._reporting(own, action.tool) as found:
                        found.append(tool)
                    offer.append(tool)
        return decision

    def _reporting(
        self, own: CombiningHandler | None, query: str
    ) -> AbstractContextManager[list[Tool]]:
        """The "retriever" run of this offer's retriever selecting tools for `query`."""
        return retrieval(type(self.retriever).__name__, query, own)

    def _query(self, inputs: Mapping[str, Any]) -> str:
        """The text tools are selected for: the input under `query_key`."""
        return str(inputs.get(self.query_key, ""))  # a missing input is the prompt's to name

    def _step_text(self, step: AgentStep) -> str | None:
        """What a step says the run is doing: the model's reply, then the tool's output; None
        for a step that called no tool of the agent (its observation is the Executor's, which
        names tools the model did not ask for)."""
        if self._toolset.find(step.action.tool) is None:
            return None
        return f"{step.action.log[:STEP_TEXT_LIMIT]}\n{step.observation[:STEP_TEXT_LIMIT]}"

    def _registered(self, selected: Sequence[Tool]) -> list[Tool]:
        """The agent's own tools among those a retriever selected (by name): one added to the
        retriever since the agent was built is not the agent's to offer."""
        found = (self._toolset.find(tool.name) for tool in selected)
        return [tool for tool in found if tool is not None]


STEP_TEXT_LIMIT = 1000
"""How many characters of a step's model reply, and of its observation, a step's selection
reads: the start says what was done and found; a long output's rest is mostly data."""


def _not_in(tool: Tool, offer: Sequence[Tool]) -> bool:
    return all(tool is not offered for offered in offer)


def _checked(retriever: ToolRetriever, toolset: Toolset) -> ToolRetriever:
    """Raises unless the retriever selects among exactly the agent's tools (by name)."""
    if not isinstance(retriever, ToolRetriever):
        raise AgentTypeError(
            f"tool_retriever must be a tools.ToolRetriever, got {type(retriever).__name__}"
        )
    agent_names = set(toolset.names)
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


class _RunOffers:
    """The tools offered in each run in progress, by run: the id of the current run (the
    Executor's), or, for an agent planning outside any run, the id of the inputs object it is
    given for every plan. A run's first plan (no steps yet) always selects afresh, and a record
    is found only for the query it was selected for. A run that does not end with the agent's
    final answer (an error, a limit, a tool returning directly) leaves its record behind: only
    the latest `LIMIT` are kept, and a run whose record was dropped selects again.

    Each record also keeps how many steps the offer has followed (see `follow`).

    A copy of an agent starts with no record: `__reduce__` makes copies and pickles fresh."""

    LIMIT = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # run -> (the hash of its query, the tools offered, how many steps were followed)
        self._offers: OrderedDict[str | int, tuple[int, list[Tool], int]] = OrderedDict()

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
            self._offers[key] = (hash(query), tools, 0)
            self._offers.move_to_end(key)
            while len(self._offers) > self.LIMIT:
                self._offers.popitem(last=False)
        return tools

    def follow(self, inputs: Mapping[str, Any], steps: int) -> bool:
        """Whether the run has taken steps since its offer last followed them (and it follows
        them now): true once per new step."""
        key = _run_key(inputs)
        with self._lock:
            record = self._offers.get(key)
            if record is None or record[2] >= steps:
                return False
            self._offers[key] = (record[0], record[1], steps)
            return True

    def end(self, inputs: Mapping[str, Any]) -> None:
        with self._lock:
            self._offers.pop(_run_key(inputs), None)


def _run_key(inputs: Mapping[str, Any]) -> str | int:
    run = current_run()
    return id(inputs) if run is None else run.id
