"""Graceful shutdown over real HTTP (serving.http_server): the server stops taking runs
(/ready and new runs 503) while it still listens, runs in flight finish within the grace
period, and those left are cancelled with a named answer, never dropped."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from chainkit import chains, checkpoints
from chainkit.serving import ServerSettings, create_app
from tests.support.held_chains import HeldChain, held_agent
from tests.support.openai_server import OpenAIServer
from tests.support.serving import Answer, RawStream, call, running, sse_events

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WAIT = 30.0


def _in_background(request: Callable[[], Answer]) -> Future[Answer]:
    pool = ThreadPoolExecutor(1)
    future = pool.submit(request)
    pool.shutdown(wait=False)
    return future


def _until_not_ready(url: str) -> Answer:
    """/ready once it says the server is shutting down (it notices within a tick)."""
    deadline = time.monotonic() + WAIT
    while (answer := call(url, "GET", "/ready", headers=AUTH)).status == 200:
        assert time.monotonic() < deadline, "the server stayed ready after shutdown began"
        time.sleep(0.02)
    return answer


def test_a_run_in_flight_finishes_while_new_ones_are_refused() -> None:
    chain = HeldChain()
    with running(create_app(chain, ServerSettings(token=TOKEN, grace_seconds=WAIT))) as server:
        body = {"input": "in flight", "run_id": "r-1"}
        answer = _in_background(lambda: call(server.url, "POST", "/invoke", body, AUTH))
        assert chain.started.wait(WAIT)
        server.shut_down()
        ready = _until_not_ready(server.url)
        assert ready.status == 503 and ready.json()["error"]["code"] == "shutting_down"
        refused = call(server.url, "POST", "/invoke", {"input": "new"}, AUTH)
        assert refused.status == 503 and refused.json()["error"]["code"] == "shutting_down"
        chain.release.set()
        finished = answer.result(WAIT)
        assert finished.status == 200
        assert finished.json() == {"run_id": "r-1", "outputs": {"output": "done: in flight"}}
        assert server.stopped()


def test_runs_left_after_the_grace_period_are_cancelled_and_answered_503() -> None:
    chain = HeldChain()
    with running(create_app(chain, ServerSettings(token=TOKEN, grace_seconds=0.2))) as server:
        body = {"input": "never ends", "run_id": "r-2"}
        answer = _in_background(lambda: call(server.url, "POST", "/invoke", body, AUTH))
        stream = RawStream(server.url, "/stream", {"input": "streamed", "run_id": "r-3"}, AUTH)
        stream.read_until(b"event: chain_start")
        server.shut_down()
        cancelled = answer.result(WAIT)
        assert cancelled.status == 503
        assert cancelled.json()["error"] == {
            "code": "shutting_down",
            "message": "the server shut down before the run finished; "
            "a checkpointed run can be resumed",
            "run_id": "r-2",
        }
        received = stream.read_until(b"event: error")
        stream.close()
        assert server.stopped()
    assert chain.cancelled.is_set() and not chain.finished.is_set()
    frames = received.split(b"\r\n\r\n", 1)[1]
    errors = [data for name, data in sse_events(_unchunked(frames)) if name == "error"]
    assert [error["error"]["code"] for error in errors] == ["shutting_down"]
    assert errors[0]["error"]["run_id"] == "r-3"


def test_a_checkpointed_run_cancelled_at_shutdown_is_resumed_later(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    store = checkpoints.SQLiteStore(tmp_path / "runs.db")
    chain, release = held_agent(openai_server, store)
    with running(create_app(chain, ServerSettings(token=TOKEN, grace_seconds=0.2))) as server:
        body = {"input": "wait", "run_id": "kept-2"}
        stream = RawStream(server.url, "/stream", body, AUTH)
        stream.read_until(b"event: tool_start")
        server.shut_down()
        stream.read_until(b"event: error")
        stream.close()
        assert server.stopped()
    assert store.load("kept-2").outputs is None
    release.set()
    assert chains.resume(chain, "kept-2") == {"output": "all done"}


def _unchunked(body: bytes) -> bytes:
    """A chunked body's data (what has come of it)."""
    data = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if not size:
            break
        data, body = data + rest[:size], rest[size + 2 :]
    return data
