"""What a page of another site can make a served chain do, over real HTTP: nothing. A body
must be sent as JSON (a form cannot say so), and a server without a token answers neither a
request that changes state from another site's page nor one whose Host is no loopback name
(a name rebound to 127.0.0.1); the clients it is for (a plain HTTP client, the `openai`
package) still run the chain."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest

from chainkit import checkpoints
from chainkit.serving import ServerSettings, create_app
from tests.support.held_chains import ApprovedThenHeld, HeldChain
from tests.support.serving import Answer, call, served

TOKEN = "t0ken-for-cross-site"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SENT_AS_JSON = {"Content-Type": "application/json"}
RUN = {"input": "hi"}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
CHAIN_ROUTES = [("/invoke", RUN), ("/stream", RUN), ("/v1/chat/completions", CHAT)]
NOT_JSON = [
    None,
    "text/plain",
    "text/plain;charset=UTF-8",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/jsonp",
    "text/plain; type=application/json",
]


def posted(url: str, path: str, body: Any, headers: dict[str, str]) -> Answer:
    """`body` as JSON text, with `headers` alone (no Content-Type unless they hold one)."""
    return call(url, "POST", path, json.dumps(body).encode(), headers)


@pytest.fixture
def chain() -> HeldChain:
    """A chain that tells whether it ran (and, released, answers at once when it does)."""
    held = HeldChain()
    held.release.set()
    return held


@pytest.fixture
def no_auth_url(chain: HeldChain) -> Iterator[str]:
    with served(create_app(chain, ServerSettings(no_auth=True))) as url:
        yield url


@pytest.mark.parametrize("content_type", NOT_JSON)
def test_a_body_not_sent_as_json_is_refused_and_runs_nothing(
    chain: HeldChain, content_type: str | None
) -> None:
    headers = AUTH if content_type is None else {**AUTH, "Content-Type": content_type}
    with served(create_app(chain, ServerSettings(token=TOKEN))) as url:
        answers = [posted(url, path, body, headers) for path, body in CHAIN_ROUTES]
    for answer in answers:
        assert answer.status == 415, answer.text
        assert answer.json()["error"]["code"] == "unsupported_media_type"
        assert "application/json" in answer.json()["error"]["message"]
    assert answers[-1].json()["error"]["type"] == "invalid_request_error"  # OpenAI's shape
    assert not chain.started.is_set()


def test_a_resume_not_sent_as_json_is_refused_before_the_run_is_read(tmp_path: Path) -> None:
    store = checkpoints.SQLiteStore(tmp_path / "runs.db")
    held = ApprovedThenHeld(store)
    try:
        with served(create_app(held.executor, ServerSettings(token=TOKEN))) as url:
            plain = posted(url, "/runs/r-1/resume", {}, {**AUTH, "Content-Type": "text/plain"})
            as_json = posted(url, "/runs/r-1/resume", {}, {**AUTH, **SENT_AS_JSON})
    finally:
        held.release.set()
        store.close()
    assert (plain.status, plain.json()["error"]["code"]) == (415, "unsupported_media_type")
    assert (as_json.status, as_json.json()["error"]["code"]) == (404, "run_not_found")


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"]
)
def test_json_is_taken_whatever_its_case_and_parameters(
    chain: HeldChain, content_type: str
) -> None:
    with served(create_app(chain, ServerSettings(token=TOKEN))) as url:
        answer = posted(url, "/invoke", RUN, {**AUTH, "Content-Type": content_type})
    assert answer.status == 200, answer.text
    assert answer.json()["outputs"] == {"output": "done: hi"}


def test_without_a_token_a_form_of_another_site_runs_nothing(
    chain: HeldChain, no_auth_url: str
) -> None:
    # What <form enctype="text/plain"> sends: a body that parses as JSON, said to be text.
    form = b'{"input": "pwned", "x": "=1"}'
    for path in ("/invoke", "/stream"):
        answer = call(no_auth_url, "POST", path, form, {"Content-Type": "text/plain"})
        assert answer.status == 415, answer.text
    assert not chain.started.is_set()


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_without_a_token_a_request_from_another_sites_page_changes_nothing(
    chain: HeldChain, no_auth_url: str, site: str
) -> None:
    headers = {**SENT_AS_JSON, "Sec-Fetch-Site": site, "Origin": "http://evil.example"}
    answers = [posted(no_auth_url, path, body, headers) for path, body in CHAIN_ROUTES]
    answers.append(call(no_auth_url, "POST", "/logout", headers=headers))
    for answer in answers:
        assert answer.status == 403, answer.text
        assert answer.json()["error"]["code"] == "cross_site"
    assert not chain.started.is_set()
    # A link of another site's page to the chat page still opens it.
    page = call(no_auth_url, "GET", "/", headers={"Sec-Fetch-Site": site})
    assert page.status == 200


@pytest.mark.parametrize("site", [None, "same-origin", "none"])
def test_without_a_token_a_request_of_the_servers_own_page_or_no_browser_runs(
    no_auth_url: str, site: str | None
) -> None:
    headers = SENT_AS_JSON if site is None else {**SENT_AS_JSON, "Sec-Fetch-Site": site}
    answer = posted(no_auth_url, "/invoke", RUN, headers)
    assert answer.status == 200, answer.text


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:{port}",
        "localhost.evil.example:{port}",
        "127.0.0.1.nip.io:{port}",
        "10.0.0.1:{port}",
        "[::2]:{port}",
        "localhost:{port}@evil.example",
        "",
    ],
)
def test_without_a_token_a_host_that_is_no_loopback_name_is_refused(
    chain: HeldChain, no_auth_url: str, host: str
) -> None:
    headers = {"Host": host.format(port=urlsplit(no_auth_url).port)}
    health = call(no_auth_url, "GET", "/health", headers=headers)
    run = posted(no_auth_url, "/invoke", RUN, {**headers, **SENT_AS_JSON})
    for answer in (health, run):
        assert answer.status == 421, answer.text
        assert answer.json()["error"]["code"] == "host_not_allowed"
    assert not chain.started.is_set()


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:{port}",
        "LocalHost:{port}",
        "127.0.0.1:{port}",
        "127.0.0.2",
        "[::1]:{port}",
    ],
)
def test_without_a_token_a_loopback_host_is_answered(no_auth_url: str, host: str) -> None:
    headers = {"Host": host.format(port=urlsplit(no_auth_url).port), **SENT_AS_JSON}
    assert posted(no_auth_url, "/invoke", RUN, headers).status == 200


def test_without_a_token_an_origin_cors_lets_in_may_run_the_chain(chain: HeldChain) -> None:
    settings = ServerSettings(no_auth=True, cors_origins=("https://app.example",))
    with served(create_app(chain, settings)) as url:
        cross_site = {**SENT_AS_JSON, "Sec-Fetch-Site": "cross-site"}
        allowed = posted(url, "/invoke", RUN, {**cross_site, "Origin": "https://app.example"})
        other = posted(url, "/invoke", RUN, {**cross_site, "Origin": "https://evil.example"})
    assert allowed.status == 200, allowed.text
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert (other.status, other.json()["error"]["code"]) == (403, "cross_site")


def test_without_a_token_the_openai_client_and_a_plain_client_run_the_chain(
    no_auth_url: str,
) -> None:
    client: Any = openai.OpenAI(base_url=f"{no_auth_url}/v1", api_key="unused", max_retries=0)
    completion = client.chat.completions.create(model="m", messages=CHAT["messages"])
    streamed = client.chat.completions.create(model="m", messages=CHAT["messages"], stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed)
    plain = call(no_auth_url, "POST", "/invoke", RUN)  # sends JSON as JSON
    assert completion.choices[0].message.content == "done: hi" == text
    assert plain.json()["outputs"] == {"output": "done: hi"}
