"""The chat page over real HTTP: served only behind the token; a browser signs in with a form
for an HttpOnly, SameSite=Strict session cookie (Secure over https) that never holds the token;
the cookie changes state only with the page's own header, from the page's own origin."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from chainkit import agents, chains, checkpoints, llms, memory, prompts, tools
from chainkit._cli.agent import builtin_agent
from chainkit.llms import BaseModel, ModelRequest
from chainkit.schema import Message
from chainkit.serving import ServerSettings, create_app
from chainkit.serving.errors import ServeConfigError
from tests.support.chromium import CHROMIUM, Chromium
from tests.support.held_chains import HeldChain
from tests.support.serving import Answer, call, served, sse_events

TOKEN = "t0ken-for-the-page"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BROWSER = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
PAGE = {"X-Chainkit-Page": "1"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture
def base_url() -> Iterator[str]:
    with served(create_app(builtin_agent(), ServerSettings(token=TOKEN))) as url:
        yield url


def sign_in(base_url: str, token: str = TOKEN, **fields: str) -> Answer:
    body = urlencode({"token": token, **fields}).encode()
    return call(base_url, "POST", "/login", body, {**FORM, **BROWSER})


def session(base_url: str, token: str = TOKEN) -> dict[str, str]:
    """The Cookie header of a browser signed in."""
    answer = sign_in(base_url, token)
    assert answer.status == 303, answer.text
    return {"Cookie": answer.headers["set-cookie"].split(";", 1)[0]}


def test_the_page_and_its_assets_are_served_with_the_token(base_url: str) -> None:
    page = call(base_url, "GET", "/", headers=AUTH)
    assert page.status == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "connect-src 'self'" in policy and "script-src 'self'" in policy
    for name, kind in (("page.js", "text/javascript"), ("page.css", "text/css")):
        assert f'"page/{name}"' in page.text
        asset = call(base_url, "GET", f"/page/{name}", headers=AUTH)
        assert asset.status == 200 and asset.headers["content-type"].startswith(kind)
        assert asset.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "path", ["/page/index.html", "/page/signin.html", "/page/..%2F_page.py", "/page/", "/page/x"]
)
def test_nothing_else_of_the_package_is_served(base_url: str, path: str) -> None:
    answer = call(base_url, "GET", path, headers=AUTH)
    assert answer.status == 404
    assert answer.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("path", ["/", "/page/page.js", "/health", "/runs/r1/trace"])
def test_a_browser_without_the_token_gets_the_sign_in_form_and_no_app_data(
    base_url: str, path: str
) -> None:
    answer = call(base_url, "GET", path, headers=BROWSER)
    assert answer.status == 401
    assert answer.headers["content-type"].startswith("text/html")
    assert answer.headers["www-authenticate"] == "Bearer"
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert 'action="/login"' in answer.text and 'name="token"' in answer.text
    assert f'name="next" value="{path}"' in answer.text
    assert "<script" not in answer.text and "Ask the agent" not in answer.text
    # A client that is no browser still gets the JSON refusal.
    assert call(base_url, "GET", path).json()["error"]["code"] == "unauthorized"


def test_signing_in_sets_a_session_cookie_that_holds_no_token(base_url: str) -> None:
    answer = sign_in(base_url, next="/runs/r1/trace")
    assert answer.status == 303
    assert answer.headers["location"] == "/runs/r1/trace"
    cookie = answer.headers["set-cookie"]
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite", "path", "max-age"} <= attributes
    assert "SameSite=Strict" in cookie and "Secure" not in cookie  # plain http here
    assert TOKEN not in cookie and TOKEN not in answer.headers["location"]
    page = call(base_url, "GET", "/", headers={**BROWSER, **session(base_url)})
    assert page.status == 200 and "page/page.js" in page.text


@pytest.mark.parametrize("token", ["", "wrong", TOKEN + "x", TOKEN[:-1], TOKEN.upper()])
def test_a_wrong_token_gets_the_form_again_and_no_cookie(base_url: str, token: str) -> None:
    answer = sign_in(base_url, token)
    assert answer.status == 401
    assert "set-cookie" not in answer.headers
    assert "not the server" in answer.text
    assert TOKEN not in answer.text


def test_the_token_is_never_taken_from_a_url(base_url: str) -> None:
    query = urlencode({"token": TOKEN})
    for method, path in (("GET", f"/login?{query}"), ("GET", f"/?{query}")):
        answer = call(base_url, method, path, headers=BROWSER)
        assert answer.status == 401 and "set-cookie" not in answer.headers
    answer = call(base_url, "POST", f"/login?{query}", b"", {**FORM, **BROWSER})
    assert answer.status == 401 and "set-cookie" not in answer.headers


@pytest.mark.parametrize(
    "back", ["//evil.example/x", "https://evil.example/", "/\\evil.example", "/a b", "x", "/ü"]
)
def test_signing_in_goes_back_only_to_a_path_of_this_server(base_url: str, back: str) -> None:
    answer = sign_in(base_url, next=back)
    assert answer.status == 303
    assert answer.headers["location"] == "/"


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"token=\xff\xfe",  # no UTF-8
        b"%ZZ=%ZZ&token",
        b"a=1&b=2&c=3&d=4&e=5&token=" + TOKEN.encode(),  # more fields than a form has
        b'{"token": "' + TOKEN.encode() + b'"}',  # JSON is no form
    ],
)
def test_a_sign_in_body_of_no_form_gets_the_form_again(base_url: str, body: bytes) -> None:
    answer = call(base_url, "POST", "/login", body, {**FORM, **BROWSER})
    assert answer.status == 401 and "set-cookie" not in answer.headers
    assert 'name="token"' in answer.text


def test_the_page_to_go_back_to_is_written_into_the_form_as_text(base_url: str) -> None:
    answer = call(base_url, "GET", "/__NOTE__/__ACTION__", headers=BROWSER)
    assert 'name="next" value="/__NOTE__/__ACTION__"' in answer.text
    assert '<p class="note" id="note"></p>' in answer.text
    hostile = call(base_url, "GET", '/"><script>x</script>', headers=BROWSER)
    assert 'name="next" value="/"' in hostile.text and "<script" not in hostile.text


def test_a_sign_in_body_over_the_limit_is_refused_unread(base_url: str) -> None:
    body = b"token=" + b"x" * (64 * 1024)
    answer = call(base_url, "POST", "/login", body, {**FORM, **BROWSER})
    assert answer.status == 413 and "set-cookie" not in answer.headers


def test_the_cookie_is_secure_when_the_request_came_over_https() -> None:
    app = create_app(builtin_agent(), ServerSettings(token=TOKEN))
    # uvicorn takes the scheme from the proxy in front that terminated TLS.
    with served(app, proxy_headers=True, forwarded_allow_ips="127.0.0.1") as url:
        body = urlencode({"token": TOKEN}).encode()
        answer = call(url, "POST", "/login", body, {**FORM, "X-Forwarded-Proto": "https"})
    assert answer.status == 303
    assert re.search(r";\s*Secure(;|$)", answer.headers["set-cookie"])


def test_the_cookie_runs_the_agent_with_the_pages_header(base_url: str) -> None:
    cookie = session(base_url)
    answer = call(base_url, "POST", "/stream", {"input": "what is 6 * 7?"}, {**cookie, **PAGE})
    assert answer.status == 200, answer.text
    _, last = sse_events(answer.body)[-1]
    assert "42" in last["data"]["outputs"]["output"]


@pytest.mark.parametrize(
    "headers",
    [
        {},  # a form of another site cannot send the page's header
        {**PAGE, "Sec-Fetch-Site": "cross-site"},
        {**PAGE, "Sec-Fetch-Site": "same-site"},  # another port or subdomain of this host
    ],
)
def test_the_cookie_changes_nothing_from_another_site(
    base_url: str, headers: dict[str, str]
) -> None:
    cookie = session(base_url)
    for path in ("/invoke", "/stream"):
        answer = call(base_url, "POST", path, {"input": "what is 6 * 7?"}, {**cookie, **headers})
        assert answer.status == 403
        assert answer.json()["error"]["code"] == "cross_site"


def test_signing_in_from_another_site_is_refused(base_url: str) -> None:
    body = urlencode({"token": TOKEN}).encode()
    headers = {**FORM, **BROWSER, "Sec-Fetch-Site": "cross-site"}
    answer = call(base_url, "POST", "/login", body, headers)
    assert answer.status == 403 and "set-cookie" not in answer.headers


@pytest.mark.parametrize(
    "cookie",
    [
        "chainkit_session=",
        "chainkit_session=1.abc",  # long expired
        "chainkit_session=99999999999.0000",  # far off, but not signed with the token
        f"chainkit_session={TOKEN}",
        "chainkit_session=" + "9" * 400,
    ],
)
def test_a_forged_or_expired_cookie_is_refused(base_url: str, cookie: str) -> None:
    answer = call(base_url, "GET", "/health", headers={"Cookie": cookie})
    assert answer.status == 401


def test_a_cookie_of_another_token_is_refused(base_url: str) -> None:
    other = create_app(builtin_agent(), ServerSettings(token="another-token"))
    with served(other) as other_url:
        cookie = session(other_url, "another-token")
    assert call(base_url, "GET", "/health", headers=cookie).status == 401


def test_bearer_clients_need_no_page_header(base_url: str) -> None:
    answer = call(base_url, "POST", "/invoke", {"input": "what is 6 * 7?"}, AUTH)
    assert answer.status == 200


def test_without_auth_the_page_is_served_as_it_is() -> None:
    with served(create_app(builtin_agent(), ServerSettings(no_auth=True))) as url:
        answer = call(url, "GET", "/", headers=BROWSER)
    assert answer.status == 200 and "page/page.js" in answer.text
    assert '<button id="sign-out" type="button" hidden>' in answer.text
    assert '<body data-sessions="no">' in answer.text  # a chain without a history


def test_signing_out_forgets_the_cookie(base_url: str) -> None:
    cookie = session(base_url)
    page = call(base_url, "GET", "/", headers={**BROWSER, **cookie})
    assert '<button id="sign-out" type="button">' in page.text
    assert call(base_url, "POST", "/logout", b"", cookie).status == 403  # not from the page
    answer = call(base_url, "POST", "/logout", b"", {**cookie, **PAGE})
    assert answer.status == 200 and answer.json() == {"status": "signed_out"}
    forget = answer.headers["set-cookie"]
    assert forget.startswith("chainkit_session=;") and "Max-Age=0" in forget


needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="chromium is not installed (CI installs it: .ci/run)",
)
HOSTILE = '<img src=x onerror="window.pwned = 1"><script>window.pwned = 2</script> & 42'
TURN = """(() => {
  const turn = document.querySelector(".turn:last-of-type");
  return {
    user: turn.querySelector(".user").textContent,
    steps: [...turn.querySelectorAll(".step")].map(
      (step) => [step.querySelector(".what").textContent, step.querySelector("pre").textContent]),
    answer: turn.querySelector(".answer").textContent,
    waiting: [...turn.querySelectorAll(".waiting")].map((card) => card.innerText),
    failed: turn.querySelector(".meta .failed")?.textContent ?? null,
    trace: turn.querySelector(".trace-link")?.href ?? null,
    meta: turn.querySelector(".meta").textContent,
    images: document.querySelectorAll("main img").length,
    scripts: document.querySelectorAll("script").length,
    pwned: window.pwned ?? null,
  };
})()"""


def signed_in(browser: Chromium, base_url: str) -> None:
    """Opens the page, which answers with the sign-in form, and signs in with it."""
    browser.open(f"{base_url}/")
    assert browser.evaluate("document.title") == "Sign in · chainkit"
    browser.navigate_by(
        f"document.getElementById('token').value = {json.dumps(TOKEN)};"
        "document.forms[0].requestSubmit()"
    )
    assert browser.evaluate("document.getElementById('message') !== null")


ANSWERED = """document.querySelector('.turn:last-of-type .answer').textContent
  || document.querySelector('.turn:last-of-type .meta .failed')"""
WAITING = "document.querySelector('.turn:last-of-type .waiting button')"


def asked(browser: Chromium, text: str, until: str = ANSWERED) -> dict[str, Any]:
    """Sends `text` and waits for the turn's answer or failure (or what `until` says)."""
    turns = browser.evaluate("document.querySelectorAll('.turn').length")
    browser.evaluate(
        f"document.getElementById('message').value = {json.dumps(text)};"
        "document.getElementById('ask').requestSubmit()"
    )
    browser.wait_for(f"document.querySelectorAll('.turn').length > {turns} && ({until})")
    seen: dict[str, Any] = browser.evaluate(TURN)
    return seen


@needs_chromium
@pytest.mark.timeout(240, method="thread")
def test_the_page_signs_in_and_streams_the_agents_steps_and_answer(
    base_url: str, tmp_path: Path
) -> None:
    with Chromium(tmp_path / "profile") as browser:
        signed_in(browser, base_url)
        seen = asked(browser, "what is 6 * 7?")
        browser.screenshot(tmp_path / "answer.png")
        browser.navigate_by("document.getElementById('sign-out').click()")
        signed_out = browser.evaluate("document.title")
    assert seen["user"] == "what is 6 * 7?"
    assert seen["answer"] == "42"
    steps = [what for what, _ in seen["steps"]]
    assert steps == [
        "OfflineModel writes",
        "calls calculator",
        "calculator",
        "OfflineModel writes",
    ], seen["steps"]
    assert seen["steps"][0][1].startswith(" I should use calculator.")  # streamed tokens
    assert seen["steps"][2][1] == "6 * 7\n→ 42"  # the tool's input, then its observation
    assert signed_out == "Sign in · chainkit"


def hostile_agent() -> agents.Executor:
    model = llms.FakeLLM(["Action: calculator\nAction Input: 6 * 7", f"Final Answer: {HOSTILE}"])
    return agents.Executor(agents.OneShotAgent(model, [tools.Calculator()]))


@needs_chromium
@pytest.mark.timeout(240, method="thread")
def test_a_reply_of_markup_is_shown_as_text(tmp_path: Path) -> None:
    app = create_app(hostile_agent(), ServerSettings(token=TOKEN))
    with served(app) as url, Chromium(tmp_path / "profile") as browser:
        signed_in(browser, url)
        seen = asked(browser, HOSTILE)
    assert seen["user"] == HOSTILE and seen["answer"] == HOSTILE
    assert seen["steps"][-1][1] == f"Final Answer: {HOSTILE}"
    assert seen["images"] == 0 and seen["scripts"] == 1 and seen["pwned"] is None


@tools.tool(requires_approval=True)
def transfer(amount: int, to: str = "savings") -> str:
    """Moves money to an account."""
    return f"moved {amount} to {to}"


def approval_agent(database: Path) -> agents.Executor:
    """The offline model calls transfer, which waits for a person; runs kept in SQLite."""
    return agents.Executor(
        agents.ToolCallingAgent(llms.OfflineModel(), [transfer]),
        checkpointer=checkpoints.SQLiteStore(database),
    )


def decided(browser: Chromium, script: str) -> dict[str, Any]:
    """Runs `script` on the waiting card and waits for the continued run's answer."""
    browser.evaluate(
        f"(() => {{ const card = {WAITING}.parentElement.parentElement; {script} }})()"
    )
    browser.wait_for(ANSWERED)
    seen: dict[str, Any] = browser.evaluate(TURN)
    return seen


@needs_chromium
@pytest.mark.timeout(240, method="thread")
def test_the_page_approves_and_denies_a_waiting_call_and_opens_the_trace(tmp_path: Path) -> None:
    app = create_app(approval_agent(tmp_path / "runs.db"), ServerSettings(token=TOKEN))
    with served(app) as url, Chromium(tmp_path / "profile") as browser:
        signed_in(browser, url)
        paused = asked(browser, "move 500 to savings", until=WAITING)
        approved = decided(browser, "card.querySelector('button.approve').click()")
        browser.screenshot(tmp_path / "approved.png")
        browser.wait_for("document.querySelector('.turn:last-of-type .trace-link')")
        trace = browser.evaluate(TURN)["trace"]
        asked(browser, "move 500 to savings", until=WAITING)
        denied = decided(
            browser,
            f"card.querySelector('input.reason').value = {json.dumps(HOSTILE)};"
            "card.querySelector('button.deny').click()",
        )
        asked(browser, "move 500 to savings", until=WAITING)
        not_json = browser.evaluate(
            f"""(() => {{ const card = {WAITING}.parentElement.parentElement;
              card.querySelector('button.edit').click();
              const shown = card.querySelector('textarea').value;
              card.querySelector('textarea').value = '{{"amount": 50,';
              card.querySelector('button.edit').click();
              return [shown, card.querySelector('.failed').textContent]; }})()"""
        )
        edited = decided(
            browser,
            """card.querySelector('textarea').value = '{"amount": 50, "to": "checking"}';
            card.querySelector('button.edit').click()""",
        )
        browser.open(trace)
        opened = browser.evaluate(
            "({title: document.title, tools: [...document.querySelectorAll('.row .name')]"
            ".map((name) => name.textContent)})"
        )
    assert paused["answer"] == "" and paused["failed"] is None
    assert paused["waiting"][0].startswith("transfer waits for your approval")
    assert '{"amount": 500}' in paused["waiting"][0]
    assert ["transfer waits for approval", '{"amount": 500}'] in paused["steps"]
    assert approved["answer"] == "moved 500 to savings"
    assert ["transfer: approve", ""] in approved["steps"]
    assert any(step[1].endswith("→ moved 500 to savings") for step in approved["steps"])
    assert "approved" in approved["waiting"][0]
    assert trace.endswith("/trace") and trace.startswith(url)
    assert denied["answer"].endswith(f"transfer did not run: {HOSTILE}")
    assert ["transfer: deny", HOSTILE] in denied["steps"]
    assert denied["images"] == 0 and denied["pwned"] is None
    assert json.loads(not_json[0]) == {"amount": 500} and not_json[1].startswith("not JSON")
    assert edited["answer"] == "moved 50 to checking"
    run_id = trace.rsplit("/", 2)[-2]
    assert run_id in opened["title"] and "transfer" in opened["tools"]


@needs_chromium
@pytest.mark.timeout(240, method="thread")
def test_a_run_that_fails_shows_its_named_error_and_no_answer(tmp_path: Path) -> None:
    model = llms.FakeLLM(["Action: calculator\nAction Input: 6 * 7"])  # no second reply
    executor = agents.Executor(agents.OneShotAgent(model, [tools.Calculator()]))
    with (
        served(create_app(executor, ServerSettings(token=TOKEN))) as url,
        Chromium(tmp_path / "profile") as browser,
    ):
        signed_in(browser, url)
        seen = asked(browser, "what is 6 * 7?")
        hidden = browser.evaluate("document.querySelector('.turn .answer').hidden")
    assert seen["answer"] == "" and hidden is True
    assert seen["failed"].startswith("the run failed (FakeLLMExhaustedError)")
    assert ["calculator", "6 * 7\n→ 42"] in seen["steps"]
    assert seen["steps"][-1][0] == "the run failed"


class Recalls(BaseModel):
    """Answers with every user message of the conversation it is shown, in order."""

    def _generate(self, request: ModelRequest) -> Message:
        said = [str(message.content) for message in request.messages if message.role == "user"]
        return Message.assistant(" | ".join(said))


@needs_chromium
@pytest.mark.timeout(240, method="thread")
def test_a_chain_with_a_history_per_session_remembers_the_pages_conversation(
    tmp_path: Path,
) -> None:
    prompt = prompts.ChatPromptTemplate(
        [prompts.MessagesPlaceholder("history"), ("user", "{input}")]
    )
    chain = chains.with_history(
        prompt | Recalls() | (lambda reply: reply.content), memory.InMemoryHistory()
    )
    try:
        app = create_app(chain, ServerSettings(token=TOKEN))  # type: ignore[arg-type, unused-ignore]
    except ServeConfigError:
        pytest.skip("this server does not serve a chain with a history per session yet")
    with served(app) as url, Chromium(tmp_path / "profile") as browser:
        signed_in(browser, url)
        first = asked(browser, "I am Ada")
        second = asked(browser, "who am I?")
        browser.open(f"{url}/")  # a new page: a new conversation
        third = asked(browser, "who am I?")
    assert (first["answer"], second["answer"]) == ("I am Ada", "I am Ada | who am I?")
    assert third["answer"] == "who am I?"


ATTACK = """<!doctype html><title>another site</title>
<form method="post" action="__TARGET__/invoke" enctype="text/plain">
<input name='{"input": "pwned' value='"}'></form>"""
"""A form whose text body is JSON: `{"input": "pwned="}`."""


@needs_chromium
@pytest.mark.timeout(240, method="thread")
def test_without_a_token_the_page_runs_the_chain_and_no_other_site_can(tmp_path: Path) -> None:
    chain = HeldChain()
    chain.release.set()
    (tmp_path / "site").mkdir()
    with (
        served(create_app(chain, ServerSettings(no_auth=True))) as url,
        _another_site(tmp_path / "site", ATTACK.replace("__TARGET__", url)) as site,
        Chromium(tmp_path / "profile") as browser,
    ):
        # A form of another site (localhost is another site than 127.0.0.1) posting JSON.
        browser.open(f"{site}/attack.html")
        browser.navigate_by("document.forms[0].submit()")
        form_answer = browser.evaluate("document.body.innerText")
        # A script of that site, whose request the browser sends without asking first.
        browser.evaluate(
            f"fetch({json.dumps(url + '/invoke')}, {{method: 'POST', mode: 'no-cors',"
            " headers: {'Content-Type': 'text/plain'}, body: '{\"input\": \"pwned\"}'})"
        )
        # A name of another site resolved to the server's address (as DNS rebinding does;
        # Chromium resolves any *.localhost to the loopback address itself).
        rebound = url.replace("127.0.0.1", "evil.localhost")
        browser.open(f"{rebound}/health")
        rebound_run = browser.evaluate(
            "fetch('/invoke', {method: 'POST', headers: {'Content-Type': 'application/json'},"
            ' body: \'{"input": "pwned"}\'}).then((answer) => answer.status)'
        )
        pwned = chain.started.is_set()
        browser.open(f"{url}/")
        seen = asked(browser, "hi")
    assert "cross_site" in form_answer
    assert rebound_run == 421
    assert not pwned, "a page of another site ran the chain"
    assert seen["answer"] == "done: hi"


@contextmanager
def _another_site(root: Path, attack: str) -> Iterator[str]:
    """`attack` served as attack.html by a plain HTTP server on localhost (another site than
    the served chain's 127.0.0.1); its base URL."""
    (root / "attack.html").write_text(attack, encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as site:
        thread = threading.Thread(target=site.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://localhost:{site.server_address[1]}"
        finally:
            site.shutdown()
