"""OpenAI backends refuse a wrong setting at construction, saying what was expected, and the
error a call ends with says how many attempts it made."""

from __future__ import annotations

import math
from typing import Any

import pytest

from chainkit.llms import Backoff, OpenAI, OpenAIEmbeddings
from chainkit.llms.errors import ModelConfigError, ModelStatusError, ModelTimeoutError
from tests.support.modes import Mode
from tests.support.openai_server import TEST_API_KEY, Fault, OpenAIServer

BACKENDS = [OpenAI, OpenAIEmbeddings]
LOCAL = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("url", "problem", "suggestion"),
    [
        ("localhost:18555/ok", "has no scheme", "http://localhost:18555/ok"),
        ("127.0.0.1:8000/v1", "has no scheme", "http://127.0.0.1:8000/v1"),
        ("//127.0.0.1:8000/v1", "has no scheme", "http://127.0.0.1:8000/v1"),
        ("http:/127.0.0.1:8000/v1", "has no host", "http://127.0.0.1:8000/v1"),
        ("https:api.example.com/v1", "has no host", "https://api.example.com/v1"),
        (" http://127.0.0.1:8000/v1\n", "spaces or control characters", "http://127.0.0.1:8000/v1"),
        ("ftp://127.0.0.1/v1", "scheme 'ftp'", None),
        ("http://", "has no host", None),
        ("http://:8000/v1", "has no host", None),
        ("http://127.0.0.1:99999/v1", "not a valid URL", None),
        ("http://127.0.0.1:port/v1", "not a valid URL", None),
        ("http://[::1/v1", "not a valid URL", None),
        ("http://local host/v1", "spaces or control characters", None),
    ],
)
def test_a_base_url_that_is_no_http_url_is_refused_at_construction(
    backend: Any, url: str, problem: str, suggestion: str | None
) -> None:
    with pytest.raises(ModelConfigError) as caught:
        backend(base_url=url)
    message = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert f"base_url {url!r} " in message and problem in message
    assert "expected a URL such as 'http://localhost:8000/v1'" in message
    if suggestion is not None:
        assert f"did you mean {suggestion!r}?" in message
    else:
        assert "did you mean" not in message


def test_the_environment_url_is_checked_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:1234/v1")
    with pytest.raises(ModelConfigError, match=r"^OPENAI_BASE_URL 'localhost:1234/v1' has no"):
        OpenAI()


@pytest.mark.parametrize("backend", BACKENDS)
def test_credentials_in_a_refused_url_are_masked(backend: Any) -> None:
    secret = "sk-proj-SECRETSECRETSECRET"
    url = f"user:{secret}@localhost:8000/v1?api-key={secret}&api-version=2024"
    with pytest.raises(ModelConfigError) as caught:
        backend(base_url=url, api_key="local-key-1234")
    message = str(caught.value)
    assert "SECRET" not in message
    assert "'***@localhost:8000/v1?api-key=***&api-version=***'" in message
    assert "did you mean 'http://***@localhost:8000/v1?api-key=***&api-version=***'?" in message


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "HTTPS://api.example.com/v1",
        "http://[::1]:8000/v1",
        "http://user:pw@localhost/v1?api-version=1",
        "https://例子.测试/v1",
    ],
)
def test_http_urls_are_accepted(backend: Any, url: str) -> None:
    assert backend(base_url=url).base_url == url


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"timeout": -1}, ValueError, "timeout must be a finite number of seconds, more than"),
        ({"timeout": 0}, ValueError, "timeout must be a finite number of seconds, more than"),
        ({"timeout": math.nan}, ValueError, "got nan"),
        ({"timeout": math.inf}, ValueError, "got inf"),
        ({"timeout": "60"}, TypeError, "timeout must be a number of seconds, got str"),
        ({"timeout": True}, TypeError, "timeout must be a number of seconds, got bool"),
        ({"max_attempts": 0}, ValueError, "max_attempts must be at least 1, got 0"),
        ({"max_attempts": -3}, ValueError, "max_attempts must be at least 1, got -3"),
        ({"max_attempts": 2.5}, TypeError, "max_attempts must be a whole number, got float"),
        ({"backoff": 2}, TypeError, "backoff must be an llms.Backoff, got int"),
        ({"backoff": 0}, TypeError, "backoff must be an llms.Backoff, got int"),
        ({"model": ""}, ValueError, "model is empty; name a model"),
        ({"model": "  "}, ValueError, "model is empty; name a model"),
        ({"model": "gpt-4o "}, ValueError, "did you mean 'gpt-4o'?"),
        ({"model": 4}, TypeError, "model must be a model name (str), got int"),
        ({"base_url": 8000}, TypeError, "base_url must be a str or None, got int"),
        (
            {"api_key": b"sk-abcdefgh12345678"},
            TypeError,
            "api_key must be a str or None, got bytes",
        ),
        ({"api_key": "sk-abcdefgh12345678\n"}, ModelConfigError, "api_key holds a space, a line"),
        ({"api_key": "sk-abc defgh12345678"}, ModelConfigError, "api_key holds a space"),
    ],
)
def test_wrong_settings_are_refused_saying_what_was_expected(
    backend: Any, settings: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        backend(**{"base_url": LOCAL, **settings})
    assert message in str(caught.value)
    assert "abcdefgh12345678" not in str(caught.value)  # an api_key is never shown


def test_a_key_from_the_environment_is_checked_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdefgh12345678\r\n")
    with pytest.raises(ModelConfigError, match=r"^OPENAI_API_KEY holds") as caught:
        OpenAI()
    assert "abcdefgh" not in str(caught.value)


def test_an_empty_model_name_from_the_environment_falls_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_MODEL", "")
    assert OpenAI(base_url=LOCAL).model == "gpt-4o-mini"
    monkeypatch.setenv("OPENAI_MODEL", "qwen2.5 ")
    with pytest.raises(ValueError, match=r"OPENAI_MODEL 'qwen2\.5 ' has spaces"):
        OpenAI(base_url=LOCAL)


@pytest.mark.parametrize(
    ("name", "use"),
    [
        ("max_retries", "use max_attempts of the model"),
        ("request_timeout", "use timeout"),
        ("openai_api_key", "use api_key of the model"),
        ("openai_api_base", "use base_url of the model"),
        ("model_name", "use model"),
        ("streaming", "use a streaming_func"),
    ],
)
def test_settings_under_other_libraries_names_are_refused(name: str, use: str) -> None:
    with pytest.raises(TypeError, match=f"unknown call option '{name}'; {use}"):
        misnamed: dict[str, Any] = {name: 3}
        OpenAI(base_url=LOCAL, **misnamed)


def test_per_call_options_are_checked_before_any_request(openai_server: OpenAIServer) -> None:
    with OpenAI("m", base_url=openai_server.base_url) as llm:
        with pytest.raises(ValueError, match="timeout must be a finite number of seconds"):
            llm.generate([], timeout=-1)
        with pytest.raises(TypeError, match="unknown call option 'max_retries'; use max_attempts"):
            llm.generate([], max_retries=2)  # type: ignore[call-arg]
    assert openai_server.requests == []


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"initial": -1}, "Backoff.initial must be a finite number of seconds, zero or more"),
        ({"maximum": math.inf}, "Backoff.maximum must be a finite number"),
        ({"retry_after_cap": math.nan}, "Backoff.retry_after_cap must be a finite number"),
        ({"retry_after_cap": "30"}, "Backoff.retry_after_cap must be a number of seconds"),
    ],
)
def test_backoff_settings_are_checked(settings: dict[str, Any], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        Backoff(**settings)
    assert Backoff(initial=0, maximum=0, retry_after_cap=0).retry_after_cap == 0


def test_embeddings_batch_size_is_checked() -> None:
    with pytest.raises(ValueError, match="batch_size must be at least 1, got 0"):
        OpenAIEmbeddings(base_url=LOCAL, batch_size=0)
    with pytest.raises(TypeError, match="batch_size must be a whole number, got float"):
        half: Any = 1.5
        OpenAIEmbeddings(base_url=LOCAL, batch_size=half)


# The final error says how many attempts were made.

FAST = Backoff(0.001, 0.001, retry_after_cap=0.001)


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_giving_up_says_how_many_attempts_were_made(
    openai_server: OpenAIServer, mode: Mode, streamed: bool
) -> None:
    llm = OpenAI("m", base_url=openai_server.base_url, max_attempts=3, backoff=FAST)
    openai_server.fail(*[Fault.http(503)] * 3)
    streaming_func = (lambda _: None) if streamed else None
    with pytest.raises(ModelStatusError) as caught:
        mode.generate(llm, [], streaming_func=streaming_func)
    llm.close()
    assert str(caught.value).endswith(
        "answered 503 Service Unavailable: loopback fault 503 (gave up after 3 attempts)"
    )
    assert caught.value.attempts == 3 and caught.value.retries_exhausted
    assert len(openai_server.requests) == 3


def test_a_timeout_with_one_attempt_says_so(openai_server: OpenAIServer, make_openai) -> None:
    openai_server.fail(Fault.slow(2))
    llm = make_openai(timeout=0.2, max_attempts=1)
    with pytest.raises(ModelTimeoutError, match=r"within 0.2 s \(gave up after 1 attempt\)$"):
        llm.generate([])


def test_an_error_not_retried_after_retries_says_so(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.fail(Fault.http(500), Fault.http(400, message="bad request"))
    with pytest.raises(ModelStatusError) as caught:
        openai_llm.generate([])
    assert str(caught.value).endswith(
        "bad request (after 2 attempts; an error like this is not retried)"
    )
    assert caught.value.attempts == 2 and not caught.value.retries_exhausted


def test_an_error_on_the_first_attempt_that_is_not_retried_reads_as_before(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.fail(Fault.http(401, message="no"))
    with pytest.raises(ModelStatusError) as caught:
        openai_llm.generate([])
    assert str(caught.value).endswith("answered 401 Unauthorized: no")
    assert caught.value.attempts == 1


def test_embeddings_give_up_saying_how_many_attempts(openai_server: OpenAIServer, arun) -> None:
    embeddings = OpenAIEmbeddings(
        base_url=openai_server.base_url, api_key=TEST_API_KEY, max_attempts=2, backoff=FAST
    )
    openai_server.fail(*[Fault.http(502)] * 4)
    with pytest.raises(ModelStatusError, match=r"\(gave up after 2 attempts\)$"):
        embeddings.embed_query("a")
    with pytest.raises(ModelStatusError, match=r"\(gave up after 2 attempts\)$"):
        arun(embeddings, embeddings.aembed_query("a"))
    embeddings.close()


def test_backoff_waits_double_with_jitter_up_to_the_maximum() -> None:
    backoff = Backoff(initial=0.5, maximum=8)
    for attempt, least in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0)]:
        waits = [backoff.wait(attempt) for _ in range(50)]
        assert all(least <= wait <= least + 0.5 for wait in waits)
        assert len(set(waits)) > 1  # jittered
    assert backoff.wait(5) == 8 and backoff.wait(100_000) == 8
