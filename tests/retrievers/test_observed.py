"""A retrieval is a "retriever" run, seen through the real handlers: the trace file (the query
and the documents found), the log (the query, the documents' ids and scores) and
OpenTelemetry (ids and scores always; the query and the documents' text only with content
captured). A Hybrid's members are runs inside its own."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from chainkit import callbacks, chains, retrievers
from chainkit.callbacks import LogHandler, OpenTelemetryHandler, TraceFile
from chainkit.callbacks.trace_html import render_html
from chainkit.callbacks.trace_view import read_trace, walk
from chainkit.documents import Document
from chainkit.indexes import InMemoryIndex
from chainkit.llms.errors import ModelError
from chainkit.retrievers import QueryError
from tests.support.modes import Mode
from tests.support.openai_server import Fault, OpenAIServer
from tests.support.otel import exporter_and_provider

QUERY = "tortoise winter"


def joined(found: list[Document]) -> str:
    return " ".join(document.id for document in found)


def ids_of(documents: list[dict[str, object]]) -> list[object]:
    return [document["document"]["id"] for document in documents]  # type: ignore[index]


def test_the_trace_file_holds_the_retrieval_inside_the_pipeline(
    tmp_path: Path, mode: Mode, embedded_index: InMemoryIndex
) -> None:
    path = tmp_path / "trace.jsonl"
    pipeline = retrievers.Hybrid.from_index(embedded_index, k=2) | joined
    with TraceFile(path) as trace:
        assert mode.run(pipeline, QUERY, callbacks=trace) == "t l"
    [root] = read_trace(path)
    runs = [(run.kind, run.name, depth) for run, depth in walk([root])]
    assert runs[:2] == [("chain", "Pipeline", 0), ("retriever", "Hybrid", 1)]
    assert sorted(runs[2:4]) == [("retriever", "Dense", 2), ("retriever", "Lexical", 2)]
    assert runs[4:] == [("chain", "joined", 1)]
    hybrid = root.children[0]
    assert hybrid.inputs == QUERY
    assert ids_of(hybrid.outputs) == ["t", "l"]
    assert all(isinstance(hit["score"], float) for hit in hybrid.outputs)
    assert hybrid.outputs[0]["document"]["text"].startswith("The tortoise sleeps")
    page = render_html([root])
    assert page.count('"kind": "retriever"') == 3 and f'"inputs": "{QUERY}"' in page


def test_the_log_names_the_query_and_the_documents_found_with_their_scores(
    mode: Mode, embedded_index: InMemoryIndex
) -> None:
    stream = io.StringIO()
    retriever = retrievers.Lexical(embedded_index)
    hits = retriever.search(QUERY)
    pipeline = retriever | joined
    mode.run(pipeline, QUERY, callbacks=LogHandler(stream))
    lines = stream.getvalue().splitlines()
    started = [line for line in lines if "retriever start" in line]
    ended = [line for line in lines if "retriever end" in line]
    assert started[0].endswith(f"retriever start: {QUERY!r}")
    scores = [f"{hit.score:.3g}" for hit in hits]
    assert ended[0].endswith(
        f"retriever end: {QUERY!r}: 2 documents: t ({scores[0]}), l ({scores[1]})"
    )
    refused = io.StringIO()
    with pytest.raises(QueryError):
        mode.run(pipeline, "", callbacks=LogHandler(refused))
    # Refused before any search starts: the step's run fails with it.
    assert "retriever" not in refused.getvalue()
    assert "chain error: Pipeline QueryError: the query is empty" in refused.getvalue()


@pytest.mark.parametrize("capture", [False, True])
def test_opentelemetry_shows_ids_and_scores_and_the_text_only_when_captured(
    capture: bool, mode: Mode, embedded_index: InMemoryIndex
) -> None:
    exporter, provider = exporter_and_provider()
    handler = OpenTelemetryHandler(provider, capture_content=capture)
    retriever = retrievers.Hybrid.from_index(embedded_index, k=2)
    expected = retriever.search(QUERY)
    mode.run(retriever | joined, QUERY, callbacks=handler)
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert {"retrieve Hybrid", "retrieve Lexical", "retrieve Dense"} <= set(spans)
    hybrid = spans["retrieve Hybrid"]
    for member in ("retrieve Lexical", "retrieve Dense"):
        parent = spans[member].parent
        assert parent is not None and parent.span_id == hybrid.context.span_id
    attributes = dict(hybrid.attributes or {})
    assert attributes["gen_ai.operation.name"] == "retrieval"
    found = json.loads(str(attributes["gen_ai.retrieval.documents"]))
    assert [document["id"] for document in found] == ["t", "l"]
    assert [document["score"] for document in found] == pytest.approx(
        [hit.score for hit in expected]
    )
    captured = {
        "chainkit.retriever.query",
        "chainkit.retriever.documents",
        "gen_ai.retrieval.query.text",
    }
    every_value = json.dumps([dict(span.attributes or {}) for span in spans.values()])
    if not capture:
        assert not captured & set(attributes)
        assert "straw" not in every_value and QUERY not in every_value
    else:
        assert attributes["chainkit.retriever.query"] == QUERY
        assert attributes["gen_ai.retrieval.query.text"] == QUERY
        documents = json.loads(str(attributes["chainkit.retriever.documents"]))
        assert ids_of(documents) == ["t", "l"]
        assert "box of straw" in documents[0]["document"]["text"]


def test_a_search_outside_any_run_reports_to_no_one(embedded_index: InMemoryIndex) -> None:
    assert callbacks.current_run() is None
    assert [hit.document.id for hit in retrievers.Lexical(embedded_index).search(QUERY)] == [
        "t",
        "l",
    ]
    assert chains.run(retrievers.Lexical(embedded_index, k=1) | joined, QUERY) == "t"


def test_an_embedder_failing_is_the_retrieval_runs_error(
    tmp_path: Path, mode: Mode, embedded_index: InMemoryIndex, openai_server: OpenAIServer
) -> None:
    exporter, provider = exporter_and_provider()
    from opentelemetry.trace import StatusCode

    path = tmp_path / "trace.jsonl"
    openai_server.fail(Fault.http(400, "the embeddings model is gone"))
    pipeline = retrievers.Hybrid.from_index(embedded_index) | joined
    with TraceFile(path) as trace, pytest.raises(ModelError, match="the embeddings model is gone"):
        mode.run(pipeline, QUERY, callbacks=[trace, OpenTelemetryHandler(provider)])
    [root] = read_trace(path)
    failed = {run.name: run.error for run, _ in walk([root]) if run.kind == "retriever"}
    assert (
        failed["Dense"] is not None and "the embeddings model is gone" in failed["Dense"]["message"]
    )
    assert failed["Hybrid"] is not None
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert spans["retrieve Dense"].status.status_code is StatusCode.ERROR
    assert spans["retrieve Hybrid"].status.status_code is StatusCode.ERROR
