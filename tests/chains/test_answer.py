"""Answer chains over the loopback server: the chunks shown under their ids, the answer's
citations read back and checked (invented ids and uncited answers reported, or raised when
strict), the token budget, map-reduce side by side, the question rewritten from a history,
async twins and streaming."""

from __future__ import annotations

import asyncio
import io
import json
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from chainkit import callbacks, chains, documents, llms, memory, retrievers
from chainkit.callbacks.trace_view import format_tree, read_trace
from chainkit.chains._answer_prompts import MAP_PROMPT
from chainkit.chains.answer import NOT_FOUND, AnswerChain
from chainkit.chains.errors import ChainTypeError, ChainWiringError, InputValueError, OptionsError
from chainkit.documents import Document
from chainkit.indexes import Hit
from chainkit.llms import OpenAI
from chainkit.retrievers import Retriever
from chainkit.schema import Message
from tests.support.event_recorder import EventRecorder
from tests.support.openai_server import Fault, OpenAIServer, Reply

NOTES = Document("Paris is the capital of France.", {"source": "notes.md"}, "notes.md@0")
FAQ = Document("The Seine flows through Paris.", {"source": "faq.md"}, "faq.md@120")
OLD = Document("Lutetia was the Roman town.", {"source": "history.md"}, "history.md@7")


class ListRetriever(Retriever):
    """Finds its documents, in order, for any query; remembers the queries it was asked."""

    def __init__(self, found: Sequence[Document]) -> None:
        self.found = list(found)
        self.queries: list[str] = []

    def _search(self, query: str) -> list[Hit]:
        self.queries.append(query)
        return [Hit(document, 1.0 - index / 100) for index, document in enumerate(self.found)]


def called(chain: chains.Chain, inputs: dict[str, Any], is_async: bool) -> dict[str, Any]:
    """`chains.call`, or `chains.acall` in an event loop of its own."""
    if is_async:
        return asyncio.run(chains.acall(chain, inputs))
    return chains.call(chain, inputs)


def chat_texts(server: OpenAIServer) -> list[str]:
    """Each chat request's messages' contents, joined."""
    return [
        "\n".join(str(message["content"]) for message in request.body["messages"])
        for request in server.chat_requests()
    ]


def test_an_answer_citing_the_chunks_shown_reports_them_and_nothing_invented(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Paris [notes.md@0], on the Seine [faq.md@120][notes.md@0].")
    chain = chains.answer_chain(ListRetriever([NOTES, FAQ]), openai_llm)
    outputs = chains.call(chain, {"input": "What is the capital of France?"})
    assert outputs["answer"] == "Paris [notes.md@0], on the Seine [faq.md@120][notes.md@0]."
    assert outputs["citations"] == ["notes.md@0", "faq.md@120"]
    assert outputs["invented_citations"] == []
    assert outputs["documents"] == [NOTES, FAQ]
    assert outputs["left_out"] == 0
    assert outputs["question"] == "What is the capital of France?"
    [prompt] = chat_texts(openai_server)
    assert "[notes.md@0]\nParis is the capital of France." in prompt
    assert "[faq.md@120]\nThe Seine flows through Paris." in prompt
    assert "Question: What is the capital of France?" in prompt


def test_run_gives_the_answer_text_and_batch_answers_each(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Paris [notes.md@0].", "Paris [notes.md@0].", "The Seine [faq.md@120].")
    chain = chains.answer_chain(ListRetriever([NOTES, FAQ]), openai_llm)
    assert chains.run(chain, "capital?") == "Paris [notes.md@0]."
    answers = chains.batch(chain, [{"input": "a"}, {"input": "b"}], max_workers=2)
    assert sorted(each["answer"] for each in answers) == [
        "Paris [notes.md@0].",
        "The Seine [faq.md@120].",
    ]


def test_the_question_may_come_under_another_key_and_predict_gives_the_answer(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Paris [notes.md@0].")
    chain = chains.answer_chain(ListRetriever([NOTES]), openai_llm, input_key="question")
    assert chain.input_keys == ["question"]
    assert chains.predict(chain, {"question": "capital?"}) == "Paris [notes.md@0]."
    assert "Question: capital?" in chat_texts(openai_server)[0]


def test_an_invented_citation_is_in_the_outputs_the_log_and_the_events(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Paris [notes.md@0], founded in 52 BC [ghost.md@9] [3].")
    log = io.StringIO()
    recorder = EventRecorder()
    chain = chains.answer_chain(ListRetriever([NOTES, FAQ]), openai_llm)
    outputs = chains.call(
        chain, {"input": "capital?"}, callbacks=[callbacks.LogHandler(log), recorder]
    )
    assert outputs["citations"] == ["notes.md@0"]
    assert outputs["invented_citations"] == ["ghost.md@9", "3"]
    assert recorder.heard("citations") == [("citations", ["notes.md@0"], ["ghost.md@9", "3"])]
    [(_, run)] = recorder.runs("citations")
    assert run is not None and run.name == "AnswerChain"
    [(_, retrieval)] = recorder.runs("retriever_start")  # the search, a run inside the chain's
    assert retrieval is not None and retrieval.parent == run
    [line] = [line for line in log.getvalue().splitlines() if "citations:" in line]
    assert "INVENTED" in line and "'ghost.md@9', '3'" in line


def test_strict_raises_for_an_invented_citation_naming_it(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Paris [notes.md@0] [ghost.md@9].")
    chain = chains.answer_chain(ListRetriever([NOTES]), openai_llm, strict=True)
    with pytest.raises(chains.InventedCitationError, match=r"'ghost\.md@9'") as raised:
        chains.call(chain, {"input": "capital?"})
    assert raised.value.invented == ["ghost.md@9"]
    assert raised.value.cited == ["notes.md@0"]
    assert raised.value.answer == "Paris [notes.md@0] [ghost.md@9]."


def test_the_chains_own_callbacks_hear_its_citations_and_async_strict_raises(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Paris [notes.md@0].", "Paris [rome.md@3].")
    log = io.StringIO()
    chain = chains.answer_chain(
        ListRetriever([NOTES]), openai_llm, strict=True, callbacks=callbacks.LogHandler(log)
    )
    assert asyncio.run(chains.arun(chain, "capital?")) == "Paris [notes.md@0]."
    assert "citations: cites 'notes.md@0'" in log.getvalue()
    with pytest.raises(chains.InventedCitationError):
        asyncio.run(chains.arun(chain, "capital?"))


def test_an_answer_citing_nothing_is_reported_and_strict_raises(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Paris.", "Paris.")
    recorder = EventRecorder()
    chain = chains.answer_chain(ListRetriever([NOTES]), openai_llm)
    outputs = chains.call(chain, {"input": "capital?"}, callbacks=recorder)
    assert outputs["citations"] == [] and outputs["invented_citations"] == []
    assert recorder.heard("citations") == [("citations", [], [])]
    strict = chains.answer_chain(ListRetriever([NOTES]), openai_llm, strict=True)
    with pytest.raises(chains.UncitedAnswerError):
        chains.call(strict, {"input": "capital?"})


def test_the_not_found_answer_needs_no_citation(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(NOT_FOUND)
    recorder = EventRecorder()
    chain = chains.answer_chain(ListRetriever([OLD]), openai_llm, strict=True)
    outputs = chains.call(chain, {"input": "capital?"}, callbacks=recorder)
    assert outputs["answer"] == NOT_FOUND
    assert recorder.heard("citations") == []
    assert NOT_FOUND in chat_texts(openai_server)[0]  # the prompt says it


def test_nothing_found_answers_not_found_without_calling_the_model(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    chain = chains.answer_chain(ListRetriever([]), openai_llm, not_found="No idea.")
    outputs = chains.call(chain, {"input": "capital?"})
    assert outputs["answer"] == "No idea."
    assert outputs["documents"] == [] and outputs["left_out"] == 0
    assert openai_server.chat_requests() == []


def test_the_budget_leaves_out_chunks_that_do_not_fit_best_first(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    big = Document("word " * 200, {"source": "big.md"}, "big.md@0")
    openai_server.push("Paris [notes.md@0].")
    words = lambda text: len(text.split())  # noqa: E731 - a tokenizer's count, by words
    chain = chains.answer_chain(
        ListRetriever([NOTES, big, FAQ, OLD]), openai_llm, token_budget=14, count_tokens=words
    )
    outputs = chains.call(chain, {"input": "capital?"})
    # notes (7 words with its label) fits, big (201) does not, faq (7) fits, old (7) not.
    assert outputs["documents"] == [NOTES, FAQ]
    assert outputs["left_out"] == 2
    [prompt] = chat_texts(openai_server)
    assert "big.md@0" not in prompt and "history.md@7" not in prompt


def test_the_default_budget_counts_the_projects_estimate(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    # "[c0]\n" and 395 characters: 400 characters, 100 tokens each.
    chunks = [Document("x" * 395, {}, f"c{index}") for index in range(5)]
    openai_server.push("x [c0].")
    chain = chains.answer_chain(ListRetriever(chunks), openai_llm, token_budget=300)
    outputs = chains.call(chain, {"input": "x?"})
    assert [each.id for each in outputs["documents"]] == ["c0", "c1", "c2"]
    assert outputs["left_out"] == 2


def test_nothing_fitting_the_budget_answers_not_found_without_the_model(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    chain = chains.answer_chain(ListRetriever([NOTES]), openai_llm, token_budget=1)
    outputs = chains.call(chain, {"input": "capital?"})
    assert outputs["answer"] == NOT_FOUND and outputs["left_out"] == 1
    assert openai_server.chat_requests() == []


def many_chunks(count: int) -> list[Document]:
    return [
        Document(f"Fact number {index}.", {}, f"facts.md@{index * 20}") for index in range(count)
    ]


def map_reduce(found: Sequence[Document], model: Any, **settings: Any) -> AnswerChain:
    """A map_reduce answer chain over `found`, with a budget that holds two of
    `many_chunks`'s chunks to a group."""
    return chains.answer_chain(
        ListRetriever(found), model, mode="map_reduce", token_budget=16, **settings
    )


@pytest.mark.parametrize("is_async", [False, True])
def test_map_reduce_maps_each_group_to_notes_then_reduces_them_with_their_citations(
    is_async: bool, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    chunks = many_chunks(12)
    # Each chunk's block is 7 or 8 tokens by the project's estimate: two fit a budget of 16.
    # Two notes hold something (9 tokens together: no collapsing), four nothing.
    notes = ["Note 0 [facts.md@0]", "N [facts.md@200]"] + ["NONE"] * 4
    openai_server.push(*notes, "All facts [facts.md@0][facts.md@200][facts.md@999].")
    chain = map_reduce(chunks, openai_llm, max_concurrency=3)
    outputs = called(chain, {"input": "facts?"}, is_async)
    texts = chat_texts(openai_server)
    assert len(texts) == 7
    maps, reduce = texts[:6], texts[6]
    shown = sorted(text.split("Documents:\n\n")[1].split("\n\nQuestion")[0] for text in maps)
    assert shown == sorted(documents.as_context(chunks[i : i + 2]) for i in range(0, 12, 2))
    for note in notes[:2]:
        assert note in reduce
    assert "NONE" not in reduce.split("Documents:")[1]
    assert outputs["documents"] == chunks
    assert outputs["citations"] == ["facts.md@0", "facts.md@200"]
    assert outputs["invented_citations"] == ["facts.md@999"]


def test_notes_that_do_not_fit_the_budget_are_collapsed_into_fewer_first(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    # Six notes of 5 or 6 tokens: 31 do not fit 16; packed 15 + 16, they are read into two
    # notes (4 + 5 tokens), which the answer is made from.
    notes = [f"Note {index} [facts.md@{index * 20}]" for index in range(6)]
    collapsed = ["C1 [facts.md@0]", "C2 [facts.md@100]"]
    openai_server.push(*notes, *collapsed, "All [facts.md@0][facts.md@100].")
    chain = map_reduce(many_chunks(12), openai_llm, max_concurrency=1)
    events = EventRecorder()
    outputs = chains.call(chain, {"input": "facts?"}, callbacks=events)
    contexts = [
        text.split("Documents:\n\n")[1].split("\n\nQuestion")[0]
        for text in chat_texts(openai_server)
    ]
    assert contexts[6:] == ["\n\n".join(notes[:3]), "\n\n".join(notes[3:]), "\n\n".join(collapsed)]
    assert outputs["citations"] == ["facts.md@0", "facts.md@100"]
    runs = [name for _, name, _ in events.heard("chain_start")]
    assert runs.count("MapDocuments") == 6 and runs.count("CollapseNotes") == 2


class InFlight:
    """A model that counts the map calls in progress at once, and holds each until `meet`
    of them are in progress together (or fails the test): the calls run side by side."""

    def __init__(self, inner: OpenAI, meet: int) -> None:
        self.inner = inner
        self.now = self.most = 0
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(meet, timeout=30)

    def generate(self, messages: Sequence[Message], **options: Any) -> Message:
        if not messages[0].content.startswith("Write down"):  # the reduce call
            return self.inner.generate(messages, **options)
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            self.barrier.wait()
            return self.inner.generate(messages, **options)
        finally:
            with self.lock:
                self.now -= 1

    async def agenerate(self, messages: Sequence[Message], **options: Any) -> Message:
        return await asyncio.to_thread(self.generate, messages, **options)


@pytest.mark.parametrize("is_async", [False, True])
def test_map_reduce_runs_at_most_max_concurrency_groups_side_by_side(
    is_async: bool, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("n [facts.md@0]", *["NONE"] * 5, "all [facts.md@0]")
    model = InFlight(openai_llm, meet=2)
    chain = map_reduce(many_chunks(12), model, max_concurrency=2)
    outputs = called(chain, {"input": "facts?"}, is_async)
    assert outputs["answer"] == "all [facts.md@0]"
    assert model.most == 2  # six map calls, met two by two, never three at once


def test_map_reduce_answers_chunks_that_fit_one_group_at_once(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("both [facts.md@0][facts.md@20]")
    chain = map_reduce(many_chunks(2), openai_llm)
    outputs = chains.call(chain, {"input": "facts?"})
    assert outputs["citations"] == ["facts.md@0", "facts.md@20"]
    [prompt] = chat_texts(openai_server)
    assert "[facts.md@0]\nFact number 0." in prompt  # the chunks themselves, no notes


def test_notes_that_all_find_nothing_answer_not_found_without_a_reduce_call(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("NONE", " NONE.\n")
    chain = map_reduce(many_chunks(4), openai_llm)
    outputs = chains.call(chain, {"input": "facts?"})
    assert outputs["answer"] == NOT_FOUND
    assert outputs["documents"] == many_chunks(4)  # read, though they held nothing
    assert len(openai_server.chat_requests()) == 2


def test_a_chunk_found_twice_is_shown_once_where_it_ranks_best(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Paris [notes.md@0].")
    chain = chains.answer_chain(ListRetriever([NOTES, FAQ, NOTES, OLD, FAQ]), openai_llm)
    outputs = chains.call(chain, {"input": "capital?"})
    assert outputs["documents"] == [NOTES, FAQ, OLD]
    assert chat_texts(openai_server)[0].count("[notes.md@0]\nParis") == 1


def test_a_failing_map_call_fails_the_chain_and_starts_no_more_groups(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.fail(Fault.http(400))
    chain = map_reduce(many_chunks(10), openai_llm, max_concurrency=1)
    with pytest.raises(llms.ModelStatusError):
        chains.call(chain, {"input": "facts?"})
    assert len(openai_server.chat_requests()) == 1


def test_a_history_rewrites_the_question_before_retrieving(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("What river flows through Paris?", "The Seine [faq.md@120].")
    retriever = ListRetriever([FAQ])
    chain = chains.answer_chain(retriever, openai_llm)
    history = [Message("user", "Tell me about Paris."), Message("assistant", "A city.")]
    events = EventRecorder()
    outputs = chains.call(
        chain, {"input": "Which river flows there?", "history": history}, callbacks=events
    )
    assert [name for _, name, _ in events.heard("chain_start")] == [
        "AnswerChain",
        "RewriteQuestion",
    ]
    assert retriever.queries == ["What river flows through Paris?"]
    assert outputs["question"] == "What river flows through Paris?"
    assert outputs["citations"] == ["faq.md@120"]
    rewrite, _ = openai_server.chat_requests()
    said = [message["content"] for message in rewrite.body["messages"]]
    assert said[1:] == ["Tell me about Paris.", "A city.", "Which river flows there?"]
    assert "Question: What river flows through Paris?" in chat_texts(openai_server)[1]
    assert "Tell me about Paris." not in chat_texts(openai_server)[1]


@pytest.mark.parametrize("is_async", [False, True])
def test_with_history_rewrites_from_the_second_question_on_and_keeps_the_answers(
    is_async: bool, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(
        "Paris [notes.md@0].", "Which river flows through Paris?", "The Seine [faq.md@120]."
    )
    retriever = ListRetriever([NOTES, FAQ])
    history = memory.InMemoryHistory()
    session = chains.with_history(chains.answer_chain(retriever, openai_llm), history).session("u")
    questions = ["What is the capital of France?", "Which river flows there?"]
    if is_async:

        async def both() -> list[str]:
            return [await chains.arun(session, question) for question in questions]

        answers = asyncio.run(both())
    else:
        answers = [chains.run(session, question) for question in questions]
    assert answers == ["Paris [notes.md@0].", "The Seine [faq.md@120]."]
    assert retriever.queries == [questions[0], "Which river flows through Paris?"]
    assert len(openai_server.chat_requests()) == 3  # no rewrite for the first question
    kept = [(message.role, message.content) for message in history.messages("u")]
    assert kept == [
        ("user", questions[0]),
        ("assistant", answers[0]),
        ("user", questions[1]),
        ("assistant", answers[1]),
    ]


def test_a_history_as_text_is_read_too(openai_server: OpenAIServer, openai_llm: OpenAI) -> None:
    openai_server.push("Which river flows through Paris?", "The Seine [faq.md@120].")
    chain = chains.answer_chain(ListRetriever([FAQ]), openai_llm)
    chains.call(chain, {"input": "And its river?", "history": "Human: Paris?\nAI: A city."})
    assert "Human: Paris?\nAI: A city." in chat_texts(openai_server)[0]


@pytest.mark.parametrize("is_async", [False, True])
def test_streaming_yields_the_answers_tokens_then_the_outputs(
    is_async: bool, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply("Paris [notes.md@0].", chunk_size=3))
    chain = chains.answer_chain(ListRetriever([NOTES]), openai_llm)
    if is_async:

        async def read() -> list[callbacks.Event]:
            return [event async for event in chains.astream(chain, "capital?")]

        events = asyncio.run(read())
    else:
        events = list(chains.stream(chain, "capital?"))
    tokens = [event.data["text"] for event in events if event.kind == "token"]
    assert len(tokens) > 1 and "".join(tokens) == "Paris [notes.md@0]."
    assert [event.kind for event in events if event.kind != "token"][-2:] == [
        "citations",
        "chain_end",
    ]
    assert events[-1].data["outputs"]["citations"] == ["notes.md@0"]


def test_streaming_map_reduce_tells_the_notes_tokens_from_the_answers(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(
        Reply("n0 [facts.md@0]", chunk_size=2),
        Reply("n1 [facts.md@40]", chunk_size=2),
        Reply("all [facts.md@0]", chunk_size=2),
    )
    chain = map_reduce(many_chunks(4), openai_llm, max_concurrency=1)
    events = list(chains.stream(chain, "facts?"))
    runs = {event.run_id: event for event in events if event.kind in ("chain_start", "llm_start")}
    by_parent: dict[str, list[str]] = {}
    for event in events:
        if event.kind == "token":
            parent = runs[event.run_id].parent_id
            assert parent is not None
            by_parent.setdefault(runs[parent].name, []).append(event.data["text"])
    assert "".join(by_parent["MapDocuments"]) == "n0 [facts.md@0]n1 [facts.md@40]"
    assert "".join(by_parent["AnswerChain"]) == "all [facts.md@0]"


def test_hostile_questions_are_refused_before_any_work(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    retriever = ListRetriever([NOTES])
    chain = chains.answer_chain(retriever, openai_llm)
    with pytest.raises(InputValueError, match="empty question"):
        chains.run(chain, " \n\t")
    with pytest.raises(ChainTypeError, match="question as a str, got int"):
        chains.call(chain, {"input": 42})
    with pytest.raises(ChainTypeError, match="chat history"):
        chains.call(chain, {"input": "q", "history": 3})
    assert retriever.queries == [] and openai_server.chat_requests() == []


def test_settings_that_cannot_work_are_refused_when_built(openai_llm: OpenAI) -> None:
    retriever = ListRetriever([NOTES])
    with pytest.raises(OptionsError, match="token_budget must be at least 1"):
        chains.answer_chain(retriever, openai_llm, token_budget=0)
    with pytest.raises(OptionsError, match="mode must be 'stuff' or 'map_reduce'"):
        chains.answer_chain(retriever, openai_llm, mode="refine")  # type: ignore[arg-type]
    with pytest.raises(ChainTypeError, match=r"retriever must be a retrievers\.Retriever"):
        chains.answer_chain([NOTES], openai_llm)  # type: ignore[arg-type]
    with pytest.raises(ChainWiringError, match=r"must read \['context', 'question'\]"):
        chains.answer_chain(retriever, openai_llm, prompt=MAP_PROMPT.partial(context="x"))
    with pytest.raises(ChainTypeError, match="strict must be True or False, got 'yes'"):
        chains.answer_chain(retriever, openai_llm, strict="yes")  # type: ignore[arg-type]
    with pytest.raises(ChainWiringError, match="input_key and history_key are both 'q'"):
        chains.answer_chain(retriever, openai_llm, input_key="q", history_key="q")
    with pytest.raises(ChainTypeError, match="count_tokens must be a function"):
        chains.answer_chain(retriever, openai_llm, count_tokens=4)  # type: ignore[arg-type]


def test_a_retriever_finding_no_documents_is_named(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    class Broken(Retriever):
        def _search(self, query: str) -> list[Hit]:
            return [Hit("text", 1.0)]  # type: ignore[arg-type]

    chain = chains.answer_chain(Broken(), openai_llm)
    with pytest.raises(ChainTypeError, match=r"retriever found a str, not a documents\.Document"):
        chains.call(chain, {"input": "q"})
    assert openai_server.chat_requests() == []


def test_a_token_counter_returning_no_count_is_named(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    chain = chains.answer_chain(
        ListRetriever([NOTES]),
        openai_llm,
        count_tokens=lambda text: "many",  # type: ignore[arg-type,return-value]
    )
    with pytest.raises(ChainTypeError, match="count_tokens must return a count"):
        chains.call(chain, {"input": "q"})


@pytest.mark.parametrize("capture_content", [False, True])
def test_opentelemetry_shows_the_citations_on_the_chains_span(
    capture_content: bool, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    from tests.support.otel import exporter_and_provider

    exporter, provider = exporter_and_provider()
    openai_server.push("Paris [notes.md@0] [ghost.md@9].")
    chain = chains.answer_chain(ListRetriever([NOTES]), openai_llm)
    handler = callbacks.OpenTelemetryHandler(provider, capture_content=capture_content)
    chains.call(chain, {"input": "capital?"}, callbacks=handler)
    [span] = [span for span in exporter.get_finished_spans() if "AnswerChain" in span.name]
    [event] = [event for event in span.events if event.name == "citations"]
    attributes = dict(event.attributes or {})
    assert attributes["chainkit.citations.cited"] == ("notes.md@0",)
    assert attributes["chainkit.citations.cited_count"] == 1
    assert attributes["chainkit.citations.invented_count"] == 1
    # The invented ids are the model's words: content, shown only when it is captured.
    assert attributes.get("chainkit.citations.invented") == (
        ("ghost.md@9",) if capture_content else None
    )


def test_a_trace_file_keeps_the_citations_and_the_log_names_an_uncited_answer(
    openai_server: OpenAIServer, openai_llm: OpenAI, tmp_path: Any
) -> None:
    openai_server.push("Paris.")
    log = io.StringIO()
    path = tmp_path / "trace.jsonl"
    chain = chains.answer_chain(ListRetriever([NOTES]), openai_llm)
    with callbacks.TraceFile(path) as trace:
        chains.call(chain, {"input": "capital?"}, callbacks=[trace, callbacks.LogHandler(log)])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    [citations] = [line for line in lines if line["kind"] == "citations"]
    assert citations["name"] == "AnswerChain"
    assert citations["data"] == {"cited": [], "invented": []}
    assert "citations: NONE: the answer cites no document" in log.getvalue()
    shown = format_tree(read_trace(path))
    assert "\n  CITATIONS NONE: the answer cites no document" in shown


def test_the_trace_tree_marks_invented_citations(
    openai_server: OpenAIServer, openai_llm: OpenAI, tmp_path: Any
) -> None:
    openai_server.push("Paris [notes.md@0] [ghost.md@9].")
    path = tmp_path / "trace.jsonl"
    chain = chains.answer_chain(ListRetriever([NOTES]), openai_llm)
    with callbacks.TraceFile(path) as trace:
        chains.call(chain, {"input": "capital?"}, callbacks=trace)
    shown = format_tree(read_trace(path))
    assert "\n  CITATIONS notes.md@0  INVENTED: ghost.md@9" in shown


@pytest.mark.parametrize("mode", ["stuff", "map_reduce"])
def test_the_offline_model_answers_citing_the_chunk_it_took_the_answer_from(mode: str) -> None:
    grains = ["rye", "spelt", "barley", "oat", "wheat", "millet"]
    chunks = [
        Document(f"A {grain} loaf rises because yeast turns sugar into gas.", {}, f"{grain}.md@0")
        for grain in grains
    ] + [Document("The tortoise sleeps through the winter in straw.", {}, "pets.md@0")]
    chain = chains.answer_chain(
        retrievers.Lexical.from_documents(chunks, k=8),
        llms.OfflineModel(),
        mode=mode,  # type: ignore[arg-type]
        token_budget=40,  # two chunks a group: map_reduce reduces the notes of three
        strict=True,
    )
    outputs = chains.call(chain, {"input": "Why does an oat loaf rise?"})
    assert outputs["answer"] == "A oat loaf rises because yeast turns sugar into gas. [oat.md@0]"
    assert outputs["citations"] == ["oat.md@0"]


def test_the_offline_model_answers_a_conversation_from_the_question_as_asked() -> None:
    retriever = retrievers.Lexical.from_documents(
        [
            Document("The tortoise sleeps through the winter in straw.", {}, "pets.md@0"),
            Document("Yeast turns sugar into gas.", {}, "bread.md@0"),
        ]
    )
    chain = chains.answer_chain(retriever, llms.OfflineModel(), strict=True)
    session = chains.with_history(chain, memory.InMemoryHistory()).session("s")
    assert chains.run(session, "What turns sugar into gas?") == (
        "Yeast turns sugar into gas. [bread.md@0]"
    )
    outputs = chains.call(session, {"input": "Where does the tortoise sleep?"})
    assert outputs["question"] == "Where does the tortoise sleep?"  # asked again, unchanged
    assert outputs["citations"] == ["pets.md@0"]


CITATIONS_SHOWN = r"""(() => {
  const details = document.getElementById("details");
  const citations = [...details.querySelectorAll("section")].find(
    (section) => section.querySelector("h3").textContent === "Citations");
  return {
    marks: [...document.querySelectorAll(".label .citations")].map(
      (mark) => [mark.className, mark.textContent]),
    facts: Object.fromEntries([...citations.querySelectorAll("table.facts tr")].map(
      (row) => [row.cells[0].textContent, row.cells[1].textContent])),
  };
})()"""


@pytest.mark.timeout(240, method="thread")
def test_the_trace_page_flags_invented_citations_on_the_answer_chains_run(
    openai_server: OpenAIServer, openai_llm: OpenAI, tmp_path: Any
) -> None:
    from chainkit._cli.entry_point import main
    from tests.support.chromium import Chromium

    openai_server.push("Paris [notes.md@0] [ghost.md@9].", "Paris [notes.md@0].")
    path = tmp_path / "run.jsonl"
    chain = chains.answer_chain(ListRetriever([NOTES]), openai_llm)
    with callbacks.TraceFile(path) as trace:
        chains.batch(
            chain, [{"input": "capital?"}, {"input": "capital?"}], max_workers=1, callbacks=trace
        )
    page = tmp_path / "run.html"
    assert main(["trace", str(path), "--html", str(page)]) == 0
    [flagged] = [
        root.id for root in read_trace(path) if root.citations and root.citations["invented"]
    ]
    with Chromium(tmp_path / "profile") as browser:
        browser.open(f"{page.as_uri()}#{flagged}")
        shown = browser.evaluate(CITATIONS_SHOWN)
    assert sorted(shown["marks"]) == [
        ["citations checked", " ✓ 1 citation"],
        ["citations flagged", " ⚠ 1 invented citation"],
    ]
    assert shown["facts"] == {"cited": "notes.md@0", "invented": "ghost.md@9"}
