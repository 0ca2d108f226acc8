"""OpenAI backend: faults injected by the loopback server, retried or failing fast."""

from __future__ import annotations

import io
import re
import socket
import traceback
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from chainkit.callbacks import Handler, LogHandler
from chainkit.llms.errors import (
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelStatusError,
    ModelTimeoutError,
)
from chainkit.llms.openai.chat import OpenAI
from chainkit.llms.retry import Backoff, retry_after_seconds
from chainkit.schema import Message
from tests.support.event_recorder import EventRecorder
from tests.support.modes import Mode
from tests.support.openai_server import (
    EMBEDDING_DIMENSIONS,
    TEST_API_KEY,
    Fault,
    OpenAIServer,
    Reply,
)

ANSWER = "The answer, at last."


def retried(events: EventRecorder) -> list[tuple[int, BaseException, float]]:
    """Each retry heard, as (attempt, error, wait)."""
    return events.described({"retry": lambda attempt, error, wait, _: (attempt, error, wait)})


def ask() -> list[Message]:
    return [Message.user("question")]


def http_date_in(seconds: float) -> str:
    return format_datetime(datetime.now(UTC) + timedelta(seconds=seconds), usegmt=True)


RETRIED = {
    "429_retry_after": (Fault.http(429, headers={"Retry-After": "0"}), ModelStatusError),
    "429_retry_after_ms": (Fault.http(429, headers={"retry-after-ms": "1"}), ModelStatusError),
    "408": (Fault.http(408), ModelStatusError),
    "409": (Fault.http(409), ModelStatusError),
    "500": (Fault.http(500), ModelStatusError),
    "503": (Fault.http(503), ModelStatusError),
    "dropped_connection": (Fault.drop(), ModelConnectionError),
    "slow_reply": (Fault.slow(2.0), ModelTimeoutError),
    "cut_off": (Fault.cut(), ModelConnectionError),
    "malformed_json": (Fault.malformed(), ModelResponseError),
}
FAIL_FAST = [400, 401, 403, 404, 422]


@pytest.mark.parametrize("name", sorted(RETRIED))
def test_retried_fault_ends_in_the_answer(
    openai_server: OpenAIServer, make_openai, name: str
) -> None:
    fault, error_type = RETRIED[name]
    llm = make_openai(timeout=0.3)  # the slow reply takes 2 s: far past it
    openai_server.fail(fault)
    openai_server.push(ANSWER)
    retries = EventRecorder()

    reply = llm.generate(ask(), callbacks=retries)

    assert reply.content == ANSWER
    assert len(openai_server.requests) == 2
    assert openai_server.pending == (0, 0)
    [(attempt, error, _)] = retried(retries)
    assert attempt == 1
    assert type(error) is error_type


STREAM_RETRIED = {
    **RETRIED,
    # The empty first delta, then "abcd" and "efgh", and no more.
    "cut_off": (Fault.cut(after_chunks=3), ModelConnectionError),
    "truncated": (Fault.truncate(after_chunks=3), ModelResponseError),
}


@pytest.mark.parametrize(
    "name", ["cut_off", "truncated", "malformed_json", "503", "dropped_connection"]
)
def test_retried_fault_in_a_stream_hands_over_each_piece_once(
    openai_server: OpenAIServer, openai_llm: OpenAI, name: str
) -> None:
    fault, error_type = STREAM_RETRIED[name]
    openai_server.fail(fault)
    openai_server.push(Reply("abcdefghijklmnop", chunk_size=4))
    pieces: list[str] = []
    retries = EventRecorder()

    reply = openai_llm.generate(ask(), streaming_func=pieces.append, callbacks=retries)

    assert reply.content == "abcdefghijklmnop"
    assert pieces == ["abcd", "efgh", "ijkl", "mnop"]
    assert len(openai_server.requests) == 2
    assert [type(e) for _, e, _ in retried(retries)] == [error_type]


def test_retried_stream_that_repeats_in_other_pieces_is_not_handed_over_twice(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    # The retry's pieces straddle the text handed over already: only what is new goes out.
    openai_server.fail(Fault.cut(after_chunks=3))
    openai_server.push(Reply("abcdefghijklmnop", chunk_size=3))
    pieces: list[str] = []

    reply = openai_llm.generate(ask(), streaming_func=pieces.append)

    assert pieces == ["abc", "def", "ghi", "jkl", "mno", "p"]
    assert "".join(pieces) == reply.content


def test_retried_stream_that_differs_stops_handing_over(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    # The first attempt shows "The cat "; the retry samples another reply. What was shown
    # cannot be taken back, so nothing more is shown; the Message holds the new reply.
    openai_server.fail(Fault.cut(after_chunks=3, reply=Reply("The cat sat down.", chunk_size=4)))
    openai_server.push(Reply("The dog ran off.", chunk_size=4))
    pieces: list[str] = []

    reply = openai_llm.generate(ask(), streaming_func=pieces.append)

    assert pieces == ["The ", "cat "]
    assert reply.content == "The dog ran off."
    assert len(openai_server.requests) == 2


def test_callbacks_hear_each_attempt_and_the_retry_says_what_it_discarded(
    openai_server: OpenAIServer, openai_llm: OpenAI, mode: Mode
) -> None:
    # The caller's function gets each piece once; the callbacks hear the stream as it was:
    # the failed attempt's tokens, the retry that discards them, then the new reply whole.
    openai_server.fail(Fault.cut(after_chunks=3, reply=Reply("The cat sat down.", chunk_size=4)))
    openai_server.push(Reply("The dog ran off.", chunk_size=4))
    pieces: list[str] = []
    heard = EventRecorder()

    reply = mode.generate(openai_llm, ask(), streaming_func=pieces.append, callbacks=heard)

    assert pieces == ["The ", "cat "]
    described: dict[str, Callable[..., object]] = {
        "streaming_func": lambda chunk: chunk,
        "retry": lambda attempt, error, wait, discarded: (attempt, type(error), discarded),
    }
    stream = heard.described(described)
    assert stream == [
        "The ",
        "cat ",
        (1, ModelConnectionError, "The cat "),
        *["The ", "dog ", "ran ", "off."],
    ]
    assert reply.content == "The dog ran off."


def test_a_retry_of_a_call_that_does_not_stream_discards_nothing(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.fail(Fault.http(503))
    openai_server.push(ANSWER)
    heard = EventRecorder()
    openai_llm.generate(ask(), callbacks=heard)
    [(_, _, _, _, discarded)] = heard.heard("retry")
    assert discarded == ""


def test_stream_that_stalls_partway_is_retried_without_repeating_text(
    openai_server: OpenAIServer, make_openai, mode: Mode
) -> None:
    llm = make_openai(timeout=0.3)  # the stall lasts until the server stops: far past it
    openai_server.fail(Fault.stall(after_chunks=3))
    openai_server.push(Reply("abcdefghijklmnop", chunk_size=4))
    pieces: list[str] = []
    retries = EventRecorder()

    reply = mode.generate(llm, ask(), streaming_func=pieces.append, callbacks=retries)

    assert reply.content == "abcdefghijklmnop"
    assert pieces == ["abcd", "efgh", "ijkl", "mnop"]
    [(_, error, _)] = retried(retries)
    assert type(error) is ModelTimeoutError
    # The read's timeout or the attempt's, whichever passes first: both are 0.3 s.
    assert re.search(r"(stream stalled for more than|attempt's timeout of) 0\.3 s", str(error))


def test_a_per_call_timeout_replaces_the_default(openai_server: OpenAIServer, make_openai) -> None:
    llm = make_openai(timeout=5, max_attempts=1)
    openai_server.fail(Fault.slow(2.0))  # well within the default, far past the call's
    with pytest.raises(ModelTimeoutError, match=r"did not answer within 0\.2 s"):
        llm.generate(ask(), timeout=0.2)
    assert "timeout" not in openai_server.requests[0].body


def test_a_failing_streaming_func_is_not_retried(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("abcdefgh")

    def broken(text: str) -> None:
        raise KeyError(text)

    with pytest.raises(KeyError):
        openai_llm.generate(ask(), streaming_func=broken)
    assert len(openai_server.requests) == 1


@pytest.mark.parametrize("status", FAIL_FAST)
def test_client_errors_fail_fast_with_what_the_server_said(
    openai_server: OpenAIServer, openai_llm: OpenAI, status: int
) -> None:
    openai_server.fail(Fault.http(status, message=f"the server refuses ({status})"))
    openai_server.push("never sent")
    retries = EventRecorder()

    with pytest.raises(ModelStatusError) as caught:
        openai_llm.generate(ask(), callbacks=retries)

    error = caught.value
    assert error.status_code == status
    assert error.message == f"the server refuses ({status})"
    assert f"answered {status} " in str(error)
    assert f"the server refuses ({status})" in str(error)
    assert len(openai_server.requests) == 1
    assert retried(retries) == []


def test_max_attempts_is_respected(openai_server: OpenAIServer, make_openai) -> None:
    llm = make_openai(max_attempts=3)
    openai_server.fail(*[Fault.http(503)] * 5)
    retries = EventRecorder()

    with pytest.raises(ModelStatusError) as caught:
        llm.generate(ask(), callbacks=retries)

    assert caught.value.status_code == 503
    assert len(openai_server.requests) == 3
    assert [attempt for attempt, _, _ in retried(retries)] == [1, 2]


def test_one_attempt_means_no_retry(openai_server: OpenAIServer, make_openai) -> None:
    llm = make_openai(max_attempts=1)
    openai_server.fail(Fault.http(500))
    with pytest.raises(ModelStatusError):
        llm.generate(ask())
    assert len(openai_server.requests) == 1


def test_timeouts_exhaust_into_a_timeout_error(openai_server: OpenAIServer, make_openai) -> None:
    llm = make_openai(timeout=0.2, max_attempts=2)
    openai_server.fail(Fault.slow(2.0), Fault.slow(2.0))
    with pytest.raises(ModelTimeoutError, match=r"did not answer within 0\.2 s"):
        llm.generate(ask())
    assert len(openai_server.requests) == 2


def test_late_reply_is_not_taken_for_a_later_request(
    openai_server: OpenAIServer, make_openai
) -> None:
    llm = make_openai(timeout=0.2)
    openai_server.fail(Fault.slow(0.5))
    openai_server.push("on time", "next")
    assert llm.generate(ask()).content == "on time"
    assert llm.generate(ask()).content == "next"


def test_unreachable_server_is_a_connection_error() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    llm = OpenAI(
        base_url=f"http://127.0.0.1:{port}/v1",
        max_attempts=2,
        backoff=Backoff(0.001, 0.001),
    )
    retries = EventRecorder()
    with pytest.raises(ModelConnectionError, match=f"127.0.0.1:{port}"):
        llm.generate(ask(), callbacks=retries)
    assert [attempt for attempt, _, _ in retried(retries)] == [1]


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"Retry-After": "0.004"}, 0.004),
        ({"Retry-After": "120"}, 0.01),  # capped by Backoff.retry_after_cap
        ({"retry-after-ms": "3"}, 0.003),
        ({"retry-after-ms": "3", "Retry-After": "1"}, 0.003),
    ],
)
def test_retry_after_sets_the_wait(
    openai_server: OpenAIServer, openai_llm: OpenAI, headers: dict[str, str], wait: float
) -> None:
    openai_server.fail(Fault.http(429, headers=headers))
    openai_server.push(ANSWER)
    retries = EventRecorder()
    openai_llm.generate(ask(), callbacks=retries)
    assert [w for _, _, w in retried(retries)] == [pytest.approx(wait)]


def test_retry_after_as_http_date(openai_server: OpenAIServer, openai_llm: OpenAI) -> None:
    openai_server.fail(Fault.http(503, headers={"Retry-After": http_date_in(60)}))
    openai_server.push(ANSWER)
    retries = EventRecorder()
    openai_llm.generate(ask(), callbacks=retries)
    assert [w for _, _, w in retried(retries)] == [0.01]  # 60 s asked, capped


def test_without_retry_after_the_wait_is_exponential_backoff(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.fail(Fault.http(500), Fault.http(500), Fault.http(500))
    openai_server.push(ANSWER)
    retries = EventRecorder()
    openai_llm.generate(ask(), callbacks=retries)
    waits = [w for _, _, w in retried(retries)]
    # initial 1 ms doubling, plus up to 1 ms of jitter, at most 5 ms
    assert 0.001 <= waits[0] <= 0.002
    assert 0.002 <= waits[1] <= 0.003
    assert 0.004 <= waits[2] <= 0.005


def test_retry_after_parsing() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    assert retry_after_seconds({"retry-after": "7"}, now) == 7.0
    assert retry_after_seconds({"retry-after": "-3"}, now) == 0.0
    assert retry_after_seconds({"retry-after": "Wed, 01 Jan 2025 00:00:30 GMT"}, now) == 30.0
    assert retry_after_seconds({"retry-after": "Tue, 31 Dec 2024 23:59:00 GMT"}, now) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}, now) is None
    assert retry_after_seconds({"retry-after-ms": "250"}, now) == 0.25
    assert retry_after_seconds({"retry-after-ms": "x", "retry-after": "2"}, now) == 2.0
    assert retry_after_seconds({}, now) is None


# The key never shows.

KEYS = [TEST_API_KEY, "local-secret-token-9876"]  # key-shaped, and not


@pytest.mark.parametrize("key", KEYS)
def test_api_key_never_appears_in_logs_errors_or_reprs(
    openai_server: OpenAIServer, make_openai, key: str
) -> None:
    llm = make_openai(api_key=key)
    log = io.StringIO()
    # The server quotes the key back in its errors, as careless proxies do.
    openai_server.fail(Fault.http(429, message="slow down, {api_key}"), Fault.http(401))
    openai_server.push("never sent")

    with pytest.raises(ModelStatusError) as caught:
        llm.generate(ask(), callbacks=LogHandler(log))

    assert openai_server.requests[0].headers["authorization"] == f"Bearer {key}"
    assert "slow down" in log.getvalue() and "401" in log.getvalue()
    error = caught.value
    texts = [log.getvalue(), str(error), repr(error), error.message, repr(llm), str(llm)]
    assert not [text for text in texts if key in text]
    assert "Incorrect API key provided: " in error.message


def test_api_key_never_appears_in_a_malformed_reply_error(
    openai_server: OpenAIServer, make_openai
) -> None:
    llm = make_openai(api_key="local-secret-token-9876", max_attempts=1)
    openai_server.fail(Fault.malformed())
    with pytest.raises(ModelResponseError, match="not valid JSON") as caught:
        llm.generate(ask())
    assert "local-secret-token-9876" not in str(caught.value)


def error_chain(error: BaseException) -> list[BaseException]:
    """`error` and every exception reachable from it through __cause__ and __context__."""
    found: list[BaseException] = []
    todo = [error]
    while todo:
        current = todo.pop()
        if any(current is seen for seen in found):
            continue
        found.append(current)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return found


CHAIN_FAULTS = {
    "401": Fault.http(401),  # its body quotes the key
    "dropped": Fault.drop(),
    "slow": Fault.slow(2.0),
    "stalled": Fault.stall(after_chunks=3),
    "malformed": Fault.malformed(),
}


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("name", sorted(CHAIN_FAULTS))
def test_no_sdk_exception_is_chained_to_a_chainkit_error(
    openai_server: OpenAIServer, make_openai, name: str, mode: Mode, streamed: bool
) -> None:
    # The SDK's exception quotes the key and holds the request with its Authorization header:
    # it must not be reachable from what chainkit raises, hidden or not.
    llm = make_openai(timeout=0.3, max_attempts=1)
    openai_server.fail(CHAIN_FAULTS[name])
    openai_server.push("never complete")
    streaming_func = (lambda _: None) if streamed else None

    with pytest.raises(ModelError) as caught:
        mode.generate(llm, ask(), streaming_func=streaming_func)

    chain = error_chain(caught.value)
    assert [type(e) for e in chain if not isinstance(e, ModelError)] == []
    assert not [e for e in chain if TEST_API_KEY in f"{e} {e!r}"]
    assert TEST_API_KEY not in "".join(traceback.format_exception(caught.value))


def test_errors_share_one_base(openai_server: OpenAIServer, make_openai) -> None:
    llm = make_openai(max_attempts=1)
    for fault in (Fault.http(401), Fault.drop(), Fault.malformed()):
        openai_server.fail(fault)
        with pytest.raises(ModelError):
            llm.generate(ask())


# Async twins.


def test_async_retried_faults(openai_server: OpenAIServer, make_openai, arun) -> None:
    llm = make_openai(timeout=0.3)
    openai_server.fail(
        Fault.http(429, headers={"retry-after-ms": "1"}), Fault.drop(), Fault.slow(2)
    )
    openai_server.push(ANSWER)
    retries = EventRecorder()

    reply = arun(llm, llm.agenerate(ask(), callbacks=retries))

    assert reply.content == ANSWER
    assert len(openai_server.requests) == 4
    assert [(a, type(e)) for a, e, _ in retried(retries)] == [
        (1, ModelStatusError),
        (2, ModelConnectionError),
        (3, ModelTimeoutError),
    ]


def test_async_stream_cut_off_hands_over_each_piece_once(
    openai_server: OpenAIServer, openai_llm: OpenAI, arun
) -> None:
    openai_server.fail(Fault.cut(after_chunks=3), Fault.malformed())
    openai_server.push(Reply("abcdefghijklmnop", chunk_size=4))
    pieces: list[str] = []

    reply = arun(openai_llm, openai_llm.agenerate(ask(), streaming_func=pieces.append))

    assert pieces == ["abcd", "efgh", "ijkl", "mnop"]
    assert reply.content == "abcdefghijklmnop"
    assert len(openai_server.requests) == 3


@pytest.mark.parametrize("status", FAIL_FAST)
def test_async_client_errors_fail_fast(
    openai_server: OpenAIServer, openai_llm: OpenAI, arun, status: int
) -> None:
    openai_server.fail(Fault.http(status, message="refused"))
    with pytest.raises(ModelStatusError, match=f"answered {status} .*: refused"):
        arun(openai_llm, openai_llm.agenerate(ask()))
    assert len(openai_server.requests) == 1


def test_async_max_attempts_is_respected(openai_server: OpenAIServer, make_openai, arun) -> None:
    llm = make_openai(max_attempts=2)
    openai_server.fail(*[Fault.http(500)] * 3)
    retries = EventRecorder()
    with pytest.raises(ModelStatusError):
        arun(llm, llm.agenerate(ask(), callbacks=retries))
    assert len(openai_server.requests) == 2
    assert [a for a, _, _ in retried(retries)] == [1]


# Embeddings use the same policy.


def test_embeddings_retry_and_fail_fast(openai_server: OpenAIServer, arun) -> None:
    from chainkit.llms.openai.embeddings import OpenAIEmbeddings

    embeddings = OpenAIEmbeddings(
        base_url=openai_server.base_url, api_key=TEST_API_KEY, backoff=Backoff(0.001, 0.001)
    )
    openai_server.fail(Fault.http(503), Fault.drop())
    assert len(embeddings.embed_documents(["a", "b"])) == 2
    assert len(openai_server.requests) == 3

    openai_server.fail(Fault.http(401))
    with pytest.raises(ModelStatusError) as caught:
        arun(embeddings, embeddings.aembed_query("a"))
    assert caught.value.status_code == 401
    assert TEST_API_KEY not in str(caught.value)
    assert len(openai_server.requests) == 4
    embeddings.close()


def test_embedding_retries_reach_the_callbacks(openai_server: OpenAIServer, arun) -> None:
    from chainkit.llms.openai.embeddings import OpenAIEmbeddings

    class Broken(Handler):
        def handle_retry(
            self, attempt: int, error: BaseException, wait_seconds: float, discarded: str
        ) -> None:
            raise RuntimeError("a broken handler must not break the call")

    embeddings = OpenAIEmbeddings(
        base_url=openai_server.base_url, api_key=TEST_API_KEY, backoff=Backoff(0.001, 0.001)
    )
    retries = EventRecorder()
    openai_server.fail(Fault.http(503), Fault.drop())
    assert len(embeddings.embed_documents(["a", "b"], callbacks=retries)) == 2
    openai_server.fail(Fault.http(429))
    assert len(embeddings.embed_query("a", callbacks=Broken())) == EMBEDDING_DIMENSIONS
    openai_server.fail(Fault.http(500))
    assert (
        len(arun(embeddings, embeddings.aembed_query("a", callbacks=retries)))
        == EMBEDDING_DIMENSIONS
    )

    assert [(a, type(e)) for a, e, _ in retried(retries)] == [
        (1, ModelStatusError),
        (2, ModelConnectionError),
        (1, ModelStatusError),
    ]
    embeddings.close()
