"""A chain served with a history per session: two requests of one session over HTTP share
its conversation (kept in SQLite), another session does not; a session takes one run at a
time; a session id is required, checked, and refused for a chain without a history."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

from chainkit import chains, llms, memory, prompts
from chainkit.serving import ServerSettings, create_app
from tests.support.openai_server import TEST_API_KEY, OpenAIServer
from tests.support.serving import RawStream, call, served

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROOT_END = re.compile(rb'"kind":"chain_end","run_id":"[^"]*","parent_id":null')


def _chat(openai_server: OpenAIServer, history: memory.ChatHistory) -> chains.WithHistory:
    model = llms.OpenAI(
        "loopback-model", base_url=openai_server.base_url, api_key=TEST_API_KEY, timeout=10
    )
    prompt = prompts.ChatPromptTemplate(
        [("system", "Be brief."), prompts.MessagesPlaceholder("history"), ("user", "{input}")]
    )
    return chains.with_history(prompt | model | (lambda reply: reply.content), history)


def _contents(request_body: dict[str, object]) -> list[str]:
    return [message["content"] for message in request_body["messages"]]  # type: ignore[attr-defined]


def test_two_requests_of_one_session_share_its_conversation(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    openai_server.push("hello Ada", "you are Ada", "no idea")
    history = memory.SQLHistory(tmp_path / "history.db")
    app = create_app(_chat(openai_server, history), ServerSettings(token=TOKEN))
    with served(app) as url:
        first = call(url, "POST", "/invoke", {"input": "I am Ada", "session_id": "s-1"}, AUTH)
        assert first.json()["outputs"] == {"output": "hello Ada"}
        body = {"input": "who am I?", "session_id": "s-1"}
        assert call(url, "POST", "/invoke", body, AUTH).json()["outputs"]["output"] == "you are Ada"
        body = {"input": "who am I?", "session_id": "s-2"}
        assert call(url, "POST", "/stream", body, AUTH).status == 200
    sent = [_contents(request.body) for request in openai_server.chat_requests()]
    assert sent[1] == ["Be brief.", "I am Ada", "hello Ada", "who am I?"]
    assert sent[2] == ["Be brief.", "who am I?"]
    assert [m.content for m in history.messages("s-2")] == ["who am I?", "no idea"]


def test_a_chain_with_a_history_needs_a_safe_session_id(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    app = create_app(_chat(openai_server, memory.InMemoryHistory()), ServerSettings(token=TOKEN))
    with served(app) as url:
        missing = call(url, "POST", "/invoke", {"input": "hi"}, AUTH)
        unsafe = call(url, "POST", "/invoke", {"input": "hi", "session_id": "../x"}, AUTH)
    assert missing.status == 422 and "session_id" in missing.json()["error"]["message"]
    assert unsafe.status == 422 and unsafe.json()["error"]["code"] == "invalid_id"
    assert not openai_server.chat_requests()


def test_a_session_takes_one_run_at_a_time() -> None:
    started, release = threading.Event(), threading.Event()

    async def held(prompt: Any) -> str:
        started.set()
        while not release.is_set():
            await asyncio.sleep(0.01)
        return "answered"

    prompt = prompts.ChatPromptTemplate(
        [prompts.MessagesPlaceholder("history"), ("user", "{input}")]
    )
    chat = chains.with_history(prompt | held, memory.InMemoryHistory())
    with served(create_app(chat, ServerSettings(token=TOKEN))) as url:
        first = RawStream(url, "/stream", {"input": "one", "session_id": "s-1"}, AUTH)
        try:
            assert started.wait(30)
            busy = call(url, "POST", "/invoke", {"input": "two", "session_id": "s-1"}, AUTH)
            assert busy.status == 409 and busy.json()["error"]["code"] == "session_busy"
            release.set()
            # The root's end: the client may send its next message once it has read it.
            first.read_until(ROOT_END)
        finally:
            first.close()
        answer = call(url, "POST", "/invoke", {"input": "three", "session_id": "s-1"}, AUTH)
        assert answer.status == 200 and answer.json()["outputs"] == {"output": "answered"}
