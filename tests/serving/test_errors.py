"""A run failing on the server: the client gets a named error with the run id and never the
provider's text (which may carry keys or prompts); the server's log has the rest."""

from __future__ import annotations

import logging

import pytest

from chainkit import llms, prompts
from chainkit.chains import Pipeline
from chainkit.serving import ServerSettings, create_app
from tests.support.openai_server import TEST_API_KEY, Fault, OpenAIServer
from tests.support.serving import call, served, sse_events

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LEAKED_KEY = "sk-proj-LEAKEDkey0123456789abcdefXYZ"
PROMPT = "the confidential prompt 7731"


def _failing_chain(openai_server: OpenAIServer) -> Pipeline:
    message = f"upstream broke on {PROMPT!r} for key {LEAKED_KEY}"
    openai_server.fail(Fault.http(500, message))
    model = llms.OpenAI(
        "loopback-model",
        base_url=openai_server.base_url,
        api_key=TEST_API_KEY,
        max_attempts=1,
        timeout=10,
    )
    chain: Pipeline = prompts.PromptTemplate.from_template("{input}") | model
    return chain


def _no_secret_in(text: str) -> None:
    for secret in (LEAKED_KEY, PROMPT, "confidential", TEST_API_KEY, "Traceback"):
        assert secret not in text


def _logged_with_traceback(caplog: pytest.LogCaptureFixture, run_id: str) -> None:
    logged = [r for r in caplog.records if r.name == "chainkit.serving" and run_id in r.message]
    assert logged and logged[0].exc_info is not None, "the run's failure was not logged"


def test_a_failed_invoke_is_a_500_with_its_run_id_and_no_provider_text(
    openai_server: OpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(_failing_chain(openai_server), ServerSettings(token=TOKEN))
    with caplog.at_level(logging.ERROR, logger="chainkit.serving"), served(app) as url:
        answer = call(url, "POST", "/invoke", {"input": PROMPT, "run_id": "fails-1"}, AUTH)
    assert answer.status == 500
    error = answer.json()["error"]
    assert error["code"] == "run_failed" and error["run_id"] == "fails-1"
    assert "ModelStatusError" in error["message"]
    _no_secret_in(answer.text)
    _logged_with_traceback(caplog, "fails-1")


def test_a_stream_failing_midway_ends_with_a_named_error_event(
    openai_server: OpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(_failing_chain(openai_server), ServerSettings(token=TOKEN))
    with caplog.at_level(logging.ERROR, logger="chainkit.serving"), served(app) as url:
        answer = call(url, "POST", "/stream", {"input": PROMPT}, AUTH)
    assert answer.status == 200
    run_id = answer.headers["x-run-id"]
    events = sse_events(answer.body)
    name, last = events[-1]
    assert name == "error"
    assert last == {
        "error": {
            "code": "run_failed",
            "message": f"the run failed (ModelStatusError); the server log has run {run_id}",
            "run_id": run_id,
        }
    }
    # The llm_error and chain_error events are there, their messages withheld.
    assert {"llm_error", "chain_error"} <= {name for name, _ in events}
    # The prompt is the caller's own input and comes back in the start events; no provider
    # text does (the fault's body names the prompt too: the inputs are left out here).
    _no_secret_in(answer.text.replace(f'"{PROMPT}"', '""'))
    _logged_with_traceback(caplog, run_id)


@pytest.mark.parametrize(
    ("body", "code", "named"),
    [
        ({"inputs": {"colour": "red"}}, "invalid_inputs", "input"),
        ({"input": "x", "session_id": "s1"}, "no_history", "with_history"),
        ({"input": "x", "run_id": "a b"}, "invalid_id", "run_id"),
    ],
)
def test_the_callers_own_mistakes_are_422_naming_them(
    openai_server: OpenAIServer, body: dict[str, object], code: str, named: str
) -> None:
    app = create_app(_failing_chain(openai_server), ServerSettings(token=TOKEN))
    with served(app) as url:
        for route in ("/invoke", "/stream"):
            answer = call(url, "POST", route, body, AUTH)
            assert answer.status == 422, answer.text
            assert answer.json()["error"]["code"] == code
            assert named in answer.json()["error"]["message"]
    assert not openai_server.chat_requests()
