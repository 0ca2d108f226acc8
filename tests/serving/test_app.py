"""The served app over real HTTP: auth, the run routes and the named refusals."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chainkit import chains, llms
from chainkit._cli.agent import builtin_agent
from chainkit.serving import ServerSettings, create_app
from chainkit.serving.errors import ServeConfigError
from tests.support.serving import call, served, sse_events

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def base_url() -> Iterator[str]:
    with served(create_app(builtin_agent(), ServerSettings(token=TOKEN))) as url:
        yield url


def test_every_route_needs_the_token(base_url: str) -> None:
    for token in (None, "wrong", TOKEN + "x", TOKEN.upper()):
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        answer = call(base_url, "GET", "/health", headers=headers)
        assert answer.status == 401
        assert answer.headers["www-authenticate"] == "Bearer"
        assert TOKEN not in answer.text
    assert call(base_url, "GET", "/health", headers=AUTH).json() == {"status": "ok"}


def test_invoke_answers_with_the_chains_outputs(base_url: str) -> None:
    answer = call(base_url, "POST", "/invoke", {"input": "what is 6 * 7?"}, AUTH)
    assert answer.status == 200, answer.text
    expected = chains.call(builtin_agent(), {"input": "what is 6 * 7?"})
    assert answer.json()["outputs"]["output"] == expected["output"]
    assert "42" in expected["output"]


def test_stream_sends_the_events_of_chains_stream(base_url: str) -> None:
    answer = call(base_url, "POST", "/stream", {"input": "what is 6 * 7?"}, AUTH)
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = sse_events(answer.body)
    expected = [event.kind for event in chains.stream(builtin_agent(), "what is 6 * 7?")]
    assert [name for name, _ in events] == expected
    _, last = events[-1]
    assert last["kind"] == "chain_end" and "42" in last["data"]["outputs"]["output"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, "invalid_json"),
        (b"[1, 2]", 400, "invalid_body"),
        (b'{"input": "x", "colour": 1}', 422, "unknown_field"),
        (b'{"inputs": "x"}', 422, "wrong_type"),
        (b"{}", 422, "missing_field"),
        (b'{"input": "' + b"x" * (2 * 1024 * 1024) + b'"}', 413, "body_too_large"),
    ],
)
def test_bad_bodies_get_named_refusals(base_url: str, body: bytes, status: int, code: str) -> None:
    answer = call(base_url, "POST", "/invoke", body, {**AUTH, "Content-Type": "application/json"})
    assert answer.status == status
    assert answer.json()["error"]["code"] == code
    assert "Traceback" not in answer.text


def test_a_server_without_a_token_must_say_so() -> None:
    with pytest.raises(ServeConfigError, match="no_auth=True"):
        ServerSettings()
    with pytest.raises(ServeConfigError, match="runs a chain"):
        create_app(llms.OfflineModel(), ServerSettings(no_auth=True))  # type: ignore[arg-type]


@pytest.mark.parametrize("run_id", ["", "../etc/passwd", "a\r\nX-Evil: 1", "x" * 129, "a/b", "ü"])
def test_a_run_id_of_unsafe_characters_is_refused(base_url: str, run_id: str) -> None:
    answer = call(base_url, "POST", "/invoke", {"input": "hi", "run_id": run_id}, AUTH)
    assert answer.status == 422
    assert answer.json()["error"]["code"] == "invalid_id"
