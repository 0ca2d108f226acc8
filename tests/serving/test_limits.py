"""The limits a client meets: runs in flight and runs a minute (429 with Retry-After), CORS
(off unless origins are named; auth still applies), and settings checked when made."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chainkit.serving import ServerSettings, create_app
from chainkit.serving._pace import ClientPace
from chainkit.serving._problems import Problem
from chainkit.serving.errors import ServeConfigError
from tests.support.held_chains import HeldChain
from tests.support.serving import RawStream, call, served

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SECOND = 1_000_000_000


class Clock:
    """A simulated clock in ns, moved by the test."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def _refused_after(pace: ClientPace, client: str) -> int:
    """The Retry-After of the 429 `client`'s start gets (a Problem is the app's to answer,
    no chainkit error: caught as the app catches it)."""
    try:
        pace.start(client)
    except Problem as refused:
        assert refused.status == 429 and refused.code == "rate_limited"
        return int(refused.headers["Retry-After"])
    raise AssertionError("the start was let through")


def test_a_client_over_its_runs_a_minute_is_told_when_to_come_back() -> None:
    clock = Clock()
    pace = ClientPace(2, clock)
    pace.start("a")
    # Two a minute: one every 30 s (and a nanosecond, so no window holds three), rounded up.
    assert _refused_after(pace, "a") == 31
    pace.start("b")  # each client has its own pace
    clock.now = 29 * SECOND
    assert _refused_after(pace, "a") == 2
    # The refused starts took no place: the next one starts on time.
    clock.now = 30 * SECOND + 1
    pace.start("a")
    assert _refused_after(pace, "a") == 31


def test_no_runs_a_minute_limit_by_default() -> None:
    pace = ClientPace(None, Clock())
    for _ in range(1000):
        pace.start("a")


def test_a_second_run_within_the_minute_is_429_with_retry_after_over_http() -> None:
    chain = HeldChain()
    chain.release.set()
    with served(create_app(chain, ServerSettings(token=TOKEN, requests_per_minute=1))) as url:
        assert call(url, "POST", "/invoke", {"input": "one"}, AUTH).status == 200
        for route in ("/invoke", "/stream"):
            answer = call(url, "POST", route, {"input": "two"}, AUTH)
            assert answer.status == 429
            assert answer.json()["error"]["code"] == "rate_limited"
            assert 1 <= int(answer.headers["retry-after"]) <= 60


def test_a_client_with_its_limit_of_runs_in_flight_gets_429() -> None:
    chain = HeldChain()
    with served(create_app(chain, ServerSettings(token=TOKEN, max_runs_per_client=1))) as url:
        stream = RawStream(url, "/stream", {"input": "one"}, AUTH)
        try:
            stream.read_until(b"event: chain_start")
            answer = call(url, "POST", "/invoke", {"input": "two"}, AUTH)
            assert answer.status == 429
            assert answer.json()["error"]["code"] == "too_many_runs"
            assert answer.headers["retry-after"] == "1"
            chain.release.set()
            stream.read_until(b"event: chain_end")
        finally:
            stream.close()
        assert call(url, "POST", "/invoke", {"input": "three"}, AUTH).status == 200


ALLOWED = "https://app.example"
PREFLIGHT = {
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization",
}


@pytest.fixture
def cors_url() -> Iterator[str]:
    chain = HeldChain()
    chain.release.set()
    with served(create_app(chain, ServerSettings(token=TOKEN, cors_origins=(ALLOWED,)))) as url:
        yield url


def test_a_preflight_from_an_allowed_origin_is_answered(cors_url: str) -> None:
    answer = call(cors_url, "OPTIONS", "/invoke", headers={"Origin": ALLOWED, **PREFLIGHT})
    assert answer.status == 200
    assert answer.headers["access-control-allow-origin"] == ALLOWED
    assert "authorization" in answer.headers["access-control-allow-headers"].lower()


def test_a_preflight_from_another_origin_is_refused(cors_url: str) -> None:
    answer = call(
        cors_url, "OPTIONS", "/invoke", headers={"Origin": "https://evil.example", **PREFLIGHT}
    )
    assert answer.status == 400
    assert "access-control-allow-origin" not in answer.headers


def test_cors_requests_still_need_the_token(cors_url: str) -> None:
    answer = call(cors_url, "POST", "/invoke", {"input": "x"}, {"Origin": ALLOWED})
    assert answer.status == 401
    answer = call(cors_url, "POST", "/invoke", {"input": "x"}, {"Origin": ALLOWED, **AUTH})
    assert answer.status == 200
    assert answer.headers["access-control-allow-origin"] == ALLOWED


def test_cors_is_off_by_default() -> None:
    chain = HeldChain()
    with served(create_app(chain, ServerSettings(token=TOKEN))) as url:
        answer = call(url, "OPTIONS", "/invoke", headers={"Origin": ALLOWED, **PREFLIGHT, **AUTH})
    assert answer.status == 405
    assert "access-control-allow-origin" not in answer.headers


@pytest.mark.parametrize(
    ("setting", "value", "named"),
    [
        ("keepalive_seconds", 0, "keepalive_seconds must be a number more than 0"),
        ("write_timeout_seconds", float("inf"), "write_timeout_seconds"),
        ("grace_seconds", -1, "grace_seconds must be a number 0 or more"),
        ("requests_per_minute", True, "requests_per_minute"),
        ("cors_origins", "https://app.example", "cors_origins must be a tuple"),
        ("cors_origins", ("",), "cors_origins"),
    ],
)
def test_settings_out_of_range_are_refused_naming_them(
    setting: str, value: object, named: str
) -> None:
    with pytest.raises(ServeConfigError, match=named):
        ServerSettings(token=TOKEN, **{setting: value})  # type: ignore[arg-type]
