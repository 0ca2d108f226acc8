"""GET /sessions/{session_id}/messages: a session's conversation, for a chain served with a
history per session; refused by name for a chain keeping none, a bad id or a bad `last`."""

from __future__ import annotations

from pathlib import Path

from chainkit import chains, llms, memory, prompts
from chainkit._cli.agent import builtin_agent
from chainkit.schema import Message
from chainkit.serving import ServerSettings, create_app
from tests.support.serving import call, served

TOKEN = "t0ken-for-sessions"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_a_sessions_messages_are_given_oldest_first(tmp_path: Path) -> None:
    history = memory.SQLHistory(tmp_path / "history.db")
    history.append("s-1", [Message.user("I am Ada"), Message.assistant("hello Ada")])
    history.append("s-1", [Message.user("my key is sk-" + "a1b2c3d4" * 4)])
    prompt = prompts.ChatPromptTemplate(
        [prompts.MessagesPlaceholder("history"), ("user", "{input}")]
    )
    chat = chains.with_history(prompt | llms.FakeLLM(["hi"]) | (lambda r: r.content), history)
    with served(create_app(chat, ServerSettings(token=TOKEN))) as url:
        answer = call(url, "GET", "/sessions/s-1/messages", None, AUTH).json()
        assert answer["session_id"] == "s-1"
        contents = [message["content"] for message in answer["messages"]]
        assert contents[:2] == ["I am Ada", "hello Ada"]
        assert "a1b2c3d4a1b2" not in contents[2]
        last = call(url, "GET", "/sessions/s-1/messages?last=1", None, AUTH).json()
        assert [message["role"] for message in last["messages"]] == ["user"]
        none = call(url, "GET", "/sessions/s-2/messages", None, AUTH).json()
        assert none["messages"] == []
        for path, code in [
            ("/sessions/s-1/messages?last=0", "invalid_query"),
            ("/sessions/" + "s" * 129 + "/messages", "invalid_id"),
        ]:
            refused = call(url, "GET", path, None, AUTH)
            assert (refused.status, refused.json()["error"]["code"]) == (422, code)
    history.close()


def test_a_chain_keeping_no_history_says_so() -> None:
    with served(create_app(builtin_agent(), ServerSettings(token=TOKEN))) as url:
        answer = call(url, "GET", "/sessions/s-1/messages", None, AUTH)
    assert (answer.status, answer.json()["error"]["code"]) == (404, "no_history")
