"""A retriever as an agent's tool in one line: the agent calls it with a query and reads the
documents found, each headed by its rank, id and source, within a bound; a query it cannot
search for comes back as the observation."""

from __future__ import annotations

import json

import pytest

from chainkit import agents, chains, retrievers, tools
from chainkit.documents import Document
from chainkit.indexes import Hit, InMemoryIndex
from chainkit.llms import FakeLLM
from chainkit.retrievers._tool import NOTHING_FOUND, observation
from chainkit.retrievers.errors import RetrieverConfigError, RetrieverTypeError
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.modes import Mode


def asking(*queries: str) -> list[Message | str]:
    """A model's script: a call of the `search_notes` tool for each query, then an answer."""
    calls = [
        ToolCall(f"c{i}", FunctionCall("search_notes", json.dumps({"input": query})))
        for i, query in enumerate(queries)
    ]
    return [Message.assistant("", calls), "done"]


def test_an_agent_calls_the_retriever_and_reads_the_documents_found(
    mode: Mode, embedded_index: InMemoryIndex
) -> None:
    tool = retrievers.Lexical(embedded_index, k=2).as_tool(
        "search_notes", "Searches my notes on pets and food."
    )
    assert isinstance(tool, tools.Tool) and tool.idempotent
    model = FakeLLM(asking("tortoise winter", ""))
    executor = agents.Executor(agents.ToolCallingAgent(model, [tool]))
    assert mode.run(executor, "Where does my tortoise sleep?") == "done"
    sent = model.calls[1].messages
    found, refused = (message.content for message in sent if message.role == "tool")
    assert found.startswith("[1] id t (score ")
    assert "The tortoise sleeps through the winter in a box of straw." in found
    assert "\n\n[2] id l (score " in found
    assert "the query is empty" in refused
    (offered,) = model.calls[0].options["tools"]
    assert offered.description == "Searches my notes on pets and food."


def test_the_observation_names_each_source_and_keeps_within_its_bound() -> None:
    long = "word " * 400
    hits = [
        Hit(Document(long, {"source": "notes/a.md"}, "notes/a.md@0"), 0.91),
        Hit(Document("short", {"source": "b.txt"}, "b.txt@0"), 0.5),
    ]
    shown = observation(hits, 300)
    assert len(shown) <= 300
    assert shown.startswith("[1] id notes/a.md@0, source notes/a.md (score 0.91)\nword word")
    assert shown.endswith("…") and "b.txt" not in shown
    whole = observation(hits, 10_000)
    assert whole.endswith("[2] id b.txt@0, source b.txt (score 0.5)\nshort")
    assert observation([], 300) == NOTHING_FOUND


def test_as_tool_refuses_a_name_or_bound_it_cannot_use(embedded_index: InMemoryIndex) -> None:
    retriever = retrievers.Dense(embedded_index)
    with pytest.raises(RetrieverTypeError, match="name must be a non-empty str"):
        retriever.as_tool("")
    with pytest.raises(RetrieverTypeError, match="description must be a non-empty str"):
        retriever.as_tool("search", 42)  # type: ignore[arg-type]
    with pytest.raises(RetrieverConfigError, match="max_chars must be at least 100"):
        retriever.as_tool("search", max_chars=10)


def test_the_tool_is_a_pipeline_step_too(embedded_index: InMemoryIndex, mode: Mode) -> None:
    pipeline = chains.pipe(retrievers.Lexical(embedded_index, k=1).as_tool("search_notes"))
    assert mode.run(pipeline, "yeast").startswith("[1] id b (score ")
