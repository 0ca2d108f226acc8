"""bench/serve_embeddings.py answers the openai client's embeddings requests, over real HTTP,
as an OpenAI-compatible server would (here with a stand-in for the model)."""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import HTTPServer

import pytest

from bench.serve_embeddings import handler
from chainkit.llms import OpenAIEmbeddings
from chainkit.tools import ToolRetriever
from tests.tools.test_tool_retriever import FIND_RESTAURANTS, MENU, _served


def _letters(texts: list[str]) -> list[list[float]]:
    """A stand-in model: how often each of a, e, i, o, u occurs."""
    return [[float(text.count(vowel)) for vowel in "aeiou"] for text in texts]


@pytest.fixture
def base_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), handler(_letters, "vowels"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.timeout(60)
def test_the_openai_client_gets_one_vector_per_text_in_order(base_url: str) -> None:
    with OpenAIEmbeddings("vowels", base_url=base_url, api_key="local") as embeddings:
        assert embeddings.embed_documents(["banana", "kiwi", ""]) == [
            [3.0, 0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 2.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 0.0],
        ]
        assert embeddings.embed_query("you") == [0.0, 0.0, 0.0, 1.0, 1.0]
        # What the benchmark does with it: a retriever whose tools are embedded by the server.
        served = [_served(s, "find_restaurants", about) for s, about, _, _ in FIND_RESTAURANTS]
        retriever = ToolRetriever([*served, MENU], top_k=3, embedder=embeddings)
        assert len(retriever.select("restaurants in Rome")) == 3


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        ("/v1/embeddings", b"not json", 400, "a JSON object with an 'input'"),
        ("/v1/embeddings", b'{"input": [1, 2]}', 400, "a string or a list of strings"),
        ("/v1/chat/completions", b"{}", 404, "no endpoint /v1/chat/completions"),
    ],
)
def test_a_bad_request_is_answered_with_what_was_wrong(
    base_url: str, path: str, body: bytes, status: int, message: str
) -> None:
    url = base_url.removesuffix("/v1") + path
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=30)
    assert refused.value.code == status
    assert message in refused.value.read().decode()


@pytest.mark.timeout(60)
def test_a_request_without_a_readable_length_is_refused_not_waited_on(base_url: str) -> None:
    host, port = base_url.removeprefix("http://").removesuffix("/v1").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(b"POST /v1/embeddings HTTP/1.1\r\nContent-Length: -1\r\n\r\n{}")
        answer = connection.recv(4096).decode()
    assert answer.startswith("HTTP/1.0 411") and "Content-Length" in answer
