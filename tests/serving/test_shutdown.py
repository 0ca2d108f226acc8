"""Graceful shutdown over real HTTP (serving.http_server): the server stops taking runs
(/ready and new runs 503) while it still listens, runs in flight finish within the grace
period, and those left are cancelled with a named answer, never dropped."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from chainkit import chains, checkpoints
from chainkit.serving import ServerSettings, create_app
from tests.support.held_chains import ApprovedThenHeld, HeldChain, held_agent
from tests.support.openai_server import OpenAIServer
from tests.support.serving import Answer, RawStream, Running, call, running, sse_events

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
    errors = [data for name, data in sse_events(_unchunked(_frames(received))) if name == "error"]
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


def _paused_runs(url: str, count: int) -> list[str]:
    """`count` runs of ApprovedThenHeld's agent, each paused for its approval."""
    return [
        call(url, "POST", "/invoke", {"input": "go"}, AUTH).json()["run_id"] for _ in "x" * count
    ]


APPROVE = {"decisions": [{"kind": "approve"}]}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@dataclass
class _Resumes:
    """Two resumes in flight, their tool calls under way: one waited for (`whole`, its
    answer to come), one streamed."""

    server: Running
    held: ApprovedThenHeld
    whole_id: str
    whole: Future[Answer]
    streamed_id: str
    stream: RawStream


@contextmanager
def _resumes_in_flight(tmp_path: Path, grace_seconds: float) -> Iterator[_Resumes]:
    store = checkpoints.SQLiteStore(tmp_path / "runs.db")
    held = ApprovedThenHeld(store)
    try:
        settings = ServerSettings(token=TOKEN, grace_seconds=grace_seconds)
        with running(create_app(held.executor, settings)) as server:
            whole_id, streamed_id = _paused_runs(server.url, 2)
            path = f"/runs/{whole_id}/resume"
            whole = _in_background(lambda: call(server.url, "POST", path, APPROVE, AUTH))
            body = {**APPROVE, "stream": True}
            stream = RawStream(server.url, f"/runs/{streamed_id}/resume", body, AUTH)
            assert held.calls.acquire(timeout=WAIT) and held.calls.acquire(timeout=WAIT)
            try:
                yield _Resumes(server, held, whole_id, whole, streamed_id, stream)
            finally:
                stream.close()
    finally:
        held.release.set()
        store.close()


def test_resumes_in_flight_finish_within_the_grace_period(tmp_path: Path) -> None:
    with _resumes_in_flight(tmp_path, WAIT) as resumes:
        resumes.server.shut_down()
        _until_not_ready(resumes.server.url)
        resumes.held.release.set()
        answer = resumes.whole.result(WAIT)
        events = sse_events(_unchunked(_frames(resumes.stream.read_until(b"0\r\n\r\n"))))
        assert resumes.server.stopped()
    assert answer.status == 200, answer.text
    assert answer.json()["outputs"] == {"output": "did one"}
    assert [name for name, _ in events][-1] == "chain_end"
    assert events[-1][1]["data"]["outputs"] == {"output": "did one"}


def test_resumes_left_after_the_grace_period_are_answered_503(tmp_path: Path) -> None:
    with _resumes_in_flight(tmp_path, 0.2) as resumes:
        resumes.server.shut_down()
        answer = resumes.whole.result(WAIT)
        events = sse_events(_unchunked(_frames(resumes.stream.read_until(b"event: error"))))
        assert resumes.server.stopped()
    assert answer.status == 503
    assert answer.json()["error"]["code"] == "shutting_down"
    assert answer.json()["error"]["run_id"] == resumes.whole_id
    assert events[-1][0] == "error"
    assert events[-1][1]["error"]["code"] == "shutting_down"
    assert events[-1][1]["error"]["run_id"] == resumes.streamed_id


def test_chat_completions_in_flight_finish_within_the_grace_period() -> None:
    chain = HeldChain()
    settings = ServerSettings(token=TOKEN, grace_seconds=WAIT)
    with running(create_app(chain, settings)) as server:
        whole = _in_background(lambda: call(server.url, "POST", "/v1/chat/completions", CHAT, AUTH))
        stream = RawStream(server.url, "/v1/chat/completions", {**CHAT, "stream": True}, AUTH)
        assert chain.started.wait(WAIT)
        server.shut_down()
        _until_not_ready(server.url)
        chain.release.set()
        answer = whole.result(WAIT)
        received = stream.read_until(b"data: [DONE]\n\n")
        stream.close()
        assert server.stopped()
    assert answer.status == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "done: hi"
    assert b"done: hi" in received


def test_chat_completions_left_after_the_grace_period_are_answered_503() -> None:
    chain = HeldChain()
    settings = ServerSettings(token=TOKEN, grace_seconds=0.2)
    with running(create_app(chain, settings)) as server:
        whole = _in_background(lambda: call(server.url, "POST", "/v1/chat/completions", CHAT, AUTH))
        stream = RawStream(server.url, "/v1/chat/completions", {**CHAT, "stream": True}, AUTH)
        stream.read_until(b'"role":"assistant"')
        assert chain.started.wait(WAIT)
        server.shut_down()
        answer = whole.result(WAIT)
        received = stream.read_until(b'"code":"shutting_down"')
        stream.close()
        assert server.stopped()
    assert answer.status == 503
    assert answer.json()["error"]["code"] == "shutting_down"
    assert answer.json()["error"]["type"] == "server_error"
    last = _unchunked(_frames(received)).split(b"\n\n")[-2]
    assert last.startswith(b"data: {") and b"event:" not in last  # the error OpenAI's clients raise
    assert json.loads(last.removeprefix(b"data: "))["error"]["code"] == "shutting_down"


def _frames(received: bytes) -> bytes:
    """A raw response's body (after its head)."""
    return received.split(b"\r\n\r\n", 1)[1]
