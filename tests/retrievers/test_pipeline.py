"""A retriever is a pipeline step: it takes the query (the pipeline's input, the value before
it, a model's reply as its text) and gives the documents found; it fits, or is refused, when
the pipeline is built. Run against the loopback OpenAI-compatible server, sync and async."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from chainkit import chains, parsers, prompts, retrievers
from chainkit.chains.errors import ChainWiringError
from chainkit.documents import Document
from chainkit.indexes import InMemoryIndex
from chainkit.llms import OpenAI
from chainkit.retrievers import QueryError
from tests.support.modes import Mode
from tests.support.openai_server import OpenAIServer

P = prompts.PromptTemplate.from_template


def numbered(documents: list[Document]) -> str:
    return "\n".join(f"[{document.id}] {document.text}" for document in documents)


def test_retriever_format_prompt_model_parser_answers_from_the_documents_found(
    mode: Mode, embedded_index: InMemoryIndex, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("In a box of straw [t].")
    retriever = retrievers.Lexical(embedded_index, k=1)
    pipeline = (
        retriever
        | chains.step(numbered)
        | P("Answer from this:\n{context}")
        | openai_llm
        | parsers.TextParser()
    )
    assert pipeline.input_keys == ["input"]
    assert mode.run(pipeline, "where does the tortoise winter") == "In a box of straw [t]."
    (request,) = openai_server.chat_requests()
    sent = request.body["messages"][0]["content"]
    assert (
        sent == "Answer from this:\n[t] The tortoise sleeps through the winter in a box of straw."
    )


def test_a_dict_of_the_documents_and_the_question_fills_the_prompt(
    mode: Mode, embedded_index: InMemoryIndex, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Bamboo.")
    retriever = retrievers.Hybrid.from_index(embedded_index, k=1)
    pipeline = (
        {"context": retriever | numbered, "question": lambda question: question}
        | P("Context:\n{context}\nQuestion: {question}")
        | openai_llm
    )
    reply = mode.call(pipeline, {"input": "熊猫吃什么"})["output"]
    assert reply.content == "Bamboo."
    sent = openai_server.chat_requests()[0].body["messages"][0]["content"]
    assert sent == "Context:\n[p] 熊猫主要吃竹子，每天要吃十几个小时。\nQuestion: 熊猫吃什么"


def test_a_models_reply_is_the_query_of_the_retriever_after_it(
    mode: Mode, embedded_index: InMemoryIndex, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("yeast sugar")  # the question rewritten as search terms
    pipeline = P("Search terms for: {question}") | openai_llm | retrievers.Lexical(embedded_index)
    found = mode.call(pipeline, {"question": "why does bread rise?"})["output"]
    assert [document.id for document in found] == ["b"]


def test_a_step_that_cannot_take_or_give_what_a_retriever_does_is_refused_when_built(
    embedded_index: InMemoryIndex, openai_llm: OpenAI
) -> None:
    retriever = retrievers.Dense(embedded_index)
    with pytest.raises(ChainWiringError, match=r"Dense takes one value \(str\), and .* gives"):
        P("{a} and {b}") | retriever
    with pytest.raises(ChainWiringError, match=r"gives one value \(list\[.*Document\]\)"):
        retriever | openai_llm
    with pytest.raises(ChainWiringError, match="Dense takes one value"):
        chains.pipe(count, retriever)


def count(text: str) -> int:
    return len(text)


def test_a_query_the_retriever_cannot_search_for_fails_the_run_with_its_name(
    mode: Mode, embedded_index: InMemoryIndex
) -> None:
    pipeline = retrievers.Lexical(embedded_index) | numbered
    with pytest.raises(QueryError, match="the query is only spaces"):
        mode.run(pipeline, "   ")


def test_a_pipeline_of_no_retriever_loads_none_of_retrieval() -> None:
    code = (
        "import sys\n"
        "from chainkit import chains, prompts\n"
        "pipeline = prompts.PromptTemplate.from_template('{q}') | (lambda m: m) | str\n"
        "assert chains.run(chains.pipe(str.upper, str.strip), ' a ') == 'A'\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.split())
    assert not {"chainkit.retrievers", "chainkit.documents", "chainkit.indexes"} & loaded


def test_one_retriever_serves_a_batch_side_by_side(
    mode: Mode, embedded_index: InMemoryIndex
) -> None:
    pipeline = retrievers.Hybrid.from_index(embedded_index, k=1) | numbered
    queries = ["tortoise winter", "熊猫", "yeast", "forcast"] * 5
    inputs = [{"input": query} for query in queries]
    if mode.is_async:
        outputs = asyncio.run(chains.abatch(pipeline, inputs, max_workers=8))
    else:
        outputs = chains.batch(pipeline, inputs, max_workers=8)
    firsts = [output["output"].split("]")[0] for output in outputs]
    assert firsts == ["[t", "[p", "[b", "[f"] * 5
