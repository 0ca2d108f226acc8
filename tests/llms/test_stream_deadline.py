"""A model's `timeout` bounds a whole attempt, also a stream a server keeps alive with SSE
comments (`: ping`) while no reply comes, or a plain reply it keeps open with whitespace: the
HTTP library's timeout bounds each read alone, and pings arrive long before it. Real HTTP to
the loopback server, which pings for far longer than any bound below; the bounds are generous
(the timeouts are 1 s)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from chainkit.llms import Fallbacks, ModelTimeoutError
from chainkit.llms.openai.chat import OpenAI
from chainkit.schema import Message
from tests.conftest import FAST_BACKOFF
from tests.support.modes import Mode
from tests.support.openai_server import Fault, OpenAIServer, Reply

PINGS_FOR = 30.0
"""How long the server keeps a stream alive without a reply: what the old code waited."""
GENEROUS = 10.0
"""Seconds a call bounded by a timeout of 1 s per attempt must end within, even under load."""
HI = [Message.user("hi")]


@pytest.mark.timeout(60)
def test_a_stream_kept_alive_by_pings_ends_at_the_attempts_timeout(
    mode: Mode, openai_server: OpenAIServer, make_openai: Callable[..., OpenAI]
) -> None:
    llm = make_openai(timeout=1, max_attempts=1)
    openai_server.fail(Fault.pings(after_chunks=2, seconds=PINGS_FOR))
    openai_server.push(Reply("never all of it"))
    pieces: list[str] = []
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError, match="not complete within the attempt's timeout of 1"):
        mode.generate(llm, HI, streaming_func=pieces.append)
    assert time.monotonic() - started < GENEROUS
    assert pieces == ["neve"]  # the reply had begun: the pings came after its first piece


@pytest.mark.timeout(60)
def test_a_plain_reply_a_server_keeps_open_with_whitespace_ends_at_the_timeout(
    mode: Mode, openai_server: OpenAIServer, make_openai: Callable[..., OpenAI]
) -> None:
    llm = make_openai(timeout=1, max_attempts=1)
    openai_server.fail(Fault.pings(seconds=PINGS_FOR))
    openai_server.push(Reply("never sent"))
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError, match="not complete within the attempt's timeout of 1"):
        mode.generate(llm, HI)
    assert time.monotonic() - started < GENEROUS


@pytest.mark.timeout(60)
def test_a_per_call_timeout_bounds_the_stream_too(
    mode: Mode, openai_server: OpenAIServer, make_openai: Callable[..., OpenAI]
) -> None:
    llm = make_openai(timeout=30, max_attempts=1)
    openai_server.fail(Fault.pings(after_chunks=0, seconds=PINGS_FOR))
    openai_server.push(Reply("never sent"))
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError):
        mode.generate(llm, HI, streaming_func=lambda piece: None, timeout=1)
    assert time.monotonic() - started < GENEROUS


@pytest.mark.timeout(60)
def test_a_timed_out_attempt_is_retried_and_the_retry_answers(
    mode: Mode, openai_server: OpenAIServer, make_openai: Callable[..., OpenAI]
) -> None:
    llm = make_openai(timeout=1, max_attempts=2, backoff=FAST_BACKOFF)
    openai_server.fail(Fault.pings(seconds=PINGS_FOR))
    openai_server.push(Reply("the answer"))
    started = time.monotonic()
    reply = mode.generate(llm, HI, streaming_func=lambda piece: None)
    assert reply.content == "the answer"
    assert time.monotonic() - started < GENEROUS
    assert len(openai_server.chat_requests()) == 2


@pytest.mark.timeout(60)
def test_fallbacks_move_on_when_the_primarys_attempts_time_out(
    mode: Mode,
    openai_server: OpenAIServer,
    make_openai: Callable[..., OpenAI],
    backup_server: OpenAIServer,
    backup: OpenAI,
) -> None:
    primary = make_openai(timeout=1, max_attempts=2, backoff=FAST_BACKOFF)
    openai_server.fail(Fault.pings(seconds=PINGS_FOR), Fault.pings(seconds=PINGS_FOR))
    openai_server.push(Reply("the primary's answer, never sent whole"))
    backup_server.push(Reply("from the backup"))
    pieces: list[str] = []
    started = time.monotonic()
    reply = mode.generate(Fallbacks([primary, backup]), HI, streaming_func=pieces.append)
    assert reply.content == "from the backup"
    assert time.monotonic() - started < 2 * GENEROUS
    assert len(openai_server.chat_requests()) == 2
    # The primary's first piece was handed over; the backup's text, which does not go on
    # from it, is not (see Fallbacks).
    assert pieces == ["the "]
