"""POST /stream (and /invoke) over real HTTP: a client that leaves cancels its run (or leaves
a checkpointed run going, when it asked), a quiet stream gets keep-alive comments, and a
client that never reads is given up on and its place freed."""

from __future__ import annotations

import http.client
import time
from pathlib import Path
from urllib.parse import urlsplit

from chainkit import chains, checkpoints
from chainkit.serving import ServerSettings, create_app
from tests.support.held_chains import ChattyChain, HeldChain, held_agent
from tests.support.openai_server import OpenAIServer
from tests.support.serving import RawStream, call, served, sse_events

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WAIT = 30.0
"""The longest a test waits for something the server does (a generous bound, not a timing)."""


def test_a_client_leaving_the_stream_cancels_its_run() -> None:
    chain = HeldChain()
    with served(create_app(chain, ServerSettings(token=TOKEN))) as url:
        stream = RawStream(url, "/stream", {"input": "hi"}, AUTH)
        stream.read_until(b"event: chain_start")
        assert chain.started.wait(WAIT)
        stream.close()
        assert chain.cancelled.wait(WAIT), "the run went on after its client left"
        assert not chain.finished.is_set()


def test_a_quiet_stream_gets_keepalive_comments() -> None:
    chain = HeldChain()
    settings = ServerSettings(token=TOKEN, keepalive_seconds=0.05)
    with served(create_app(chain, settings)) as url:
        stream = RawStream(url, "/stream", {"input": "hi"}, AUTH)
        stream.read_until(b": ping\n\n")
        assert chain.started.is_set() and not chain.finished.is_set()
        chain.release.set()
        body = stream.read_until(b"event: chain_end")
        stream.close()
    assert b"done: hi" in body.split(b": ping\n\n")[-1]


def test_a_client_that_never_reads_is_given_up_and_its_place_freed() -> None:
    chain = ChattyChain()
    settings = ServerSettings(token=TOKEN, write_timeout_seconds=0.5, max_runs_per_client=1)
    with served(create_app(chain, settings)) as url:
        stalled = RawStream(url, "/stream", {"input": "go"}, AUTH, receive_buffer=4096)
        try:
            assert chain.cancelled.wait(WAIT), "the run of a client that never reads went on"
            # Its place is free: the same client may start a run again.
            chain.cancelled.clear()
            chain.release.set()
            answer = call(url, "POST", "/invoke", {"input": "again"}, AUTH)
            assert answer.status == 200, answer.text
        finally:
            stalled.close()


def test_a_checkpointed_run_goes_on_when_its_client_leaves_if_asked(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    store = checkpoints.SQLiteStore(tmp_path / "runs.db")
    chain, release = held_agent(openai_server, store)
    with served(create_app(chain, ServerSettings(token=TOKEN))) as url:
        body = {"input": "wait", "run_id": "kept-1", "on_disconnect": "continue"}
        stream = RawStream(url, "/stream", body, AUTH)
        stream.read_until(b"event: tool_start")
        stream.close()
        release.set()
        deadline = time.monotonic() + WAIT
        while store.load("kept-1").outputs is None:
            assert time.monotonic() < deadline, "the run did not go on without its client"
            time.sleep(0.05)
    assert store.load("kept-1").outputs == {"output": "all done"}


def test_continuing_without_a_checkpointer_is_refused_naming_the_fix() -> None:
    with served(create_app(HeldChain(), ServerSettings(token=TOKEN))) as url:
        answer = call(url, "POST", "/stream", {"input": "x", "on_disconnect": "continue"}, AUTH)
        assert answer.status == 422
        assert answer.json()["error"]["code"] == "not_checkpointed"
        assert "checkpointer=" in answer.json()["error"]["message"]
        answer = call(url, "POST", "/stream", {"input": "x", "on_disconnect": "later"}, AUTH)
        assert answer.json()["error"]["code"] == "wrong_value"


def test_a_stream_read_with_a_plain_http_client_ends_with_the_outputs() -> None:
    chain = HeldChain()
    chain.release.set()
    with served(create_app(chain, ServerSettings(token=TOKEN))) as url:
        split = urlsplit(url)
        connection = http.client.HTTPConnection(split.hostname or "", split.port, timeout=WAIT)
        headers = {**AUTH, "Content-Type": "application/json"}
        connection.request("POST", "/stream", b'{"input": "hi"}', headers)
        response = connection.getresponse()
        assert response.getheader("x-run-id")
        events = sse_events(response.read())
        connection.close()
    assert [name for name, _ in events] == ["chain_start", "chain_end"]
    assert events[-1][1]["data"]["outputs"] == chains.call(chain, {"input": "hi"})


def test_a_client_leaving_an_invoke_cancels_its_run_and_frees_its_place() -> None:
    chain = HeldChain()
    settings = ServerSettings(token=TOKEN, max_runs_per_client=1)
    with served(create_app(chain, settings)) as url:
        waiting = RawStream(url, "/invoke", {"input": "hi"}, AUTH)
        assert chain.started.wait(WAIT)
        waiting.close()
        assert chain.cancelled.wait(WAIT), "the run went on after its client left"
        chain.release.set()
        assert call(url, "POST", "/invoke", {"input": "again"}, AUTH).status == 200
