"""What a request costs on the client: plain chat calls go out through the client's `post`,
skipping the SDK's walk over the body (what reaches the server must be exactly what
`chat.completions.create` would send), and requests in flight are spread over async clients
of at most 64 each, so no connection pool grows to where scanning it costs more than the
request."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import openai
import pytest

from chainkit.llms.openai._connection import Connection
from chainkit.llms.openai._request import build_request
from chainkit.llms.openai.chat import OpenAI
from chainkit.schema import FunctionCall, Message, ToolCall, ToolInfo
from tests.support.openai_server import TEST_API_KEY, OpenAIServer, Recorded

MESSAGES = [
    Message.system("你是助手"),
    Message.user('weather in 北京? 😀 and a "quote"'),
    Message.assistant("", tool_calls=[ToolCall("call_1", FunctionCall("weather", '{"c": 1}'))]),
    Message.tool("21 °C", tool_call_id="call_1"),
]
TOOLS = [ToolInfo("weather", "the weather", {"type": "object", "properties": {}})]
OPTIONS: dict[str, Any] = {
    "temperature": 0.5,
    "max_tokens": 64,
    "seed": 3,
    "presence_penalty": 0.1,
    "extra_body": {"min_p": 0.05, "top_k": 5},
    "extra_headers": {"X-Tenant": "t-7"},
    "extra_query": {"api-version": "2024-06-01"},
    "timeout": 4,
}
SHOWN_HEADERS = ("x-tenant", "content-type", "authorization", "x-stainless-raw-response")


def seen(request: Recorded) -> tuple[Any, dict[str, str], dict[str, str | None]]:
    return request.body, request.query, {h: request.headers.get(h) for h in SHOWN_HEADERS}


@pytest.mark.timeout(30)
def test_a_plain_call_sends_what_the_sdk_create_sends(mode):
    with OpenAIServer() as server:
        server.push("ours", "the sdk's")
        llm = OpenAI("m", base_url=server.base_url, api_key=TEST_API_KEY, max_attempts=1)
        request = build_request("m", MESSAGES, ["\nObservation:"], TOOLS, OPTIONS, stream=False)
        client = openai.OpenAI(base_url=server.base_url, api_key=TEST_API_KEY, max_retries=0)
        mode.generate(llm, MESSAGES, stop=["\nObservation:"], tools=TOOLS, **OPTIONS)
        if mode.is_async:
            client.chat.completions.with_raw_response.create(**request)
        else:  # a sync call reads the body itself, so that its deadline bounds the reading
            with client.chat.completions.with_streaming_response.create(**request) as raw:
                raw.read()
        client.close()
        llm.close()
    ours, sdk = server.requests
    assert seen(ours) == seen(sdk)
    assert ours.body["top_k"] == 5 and ours.body["presence_penalty"] == 0.1


def test_requests_in_flight_fill_one_client_before_the_next_is_made():
    connection = Connection("http://127.0.0.1:9/v1", TEST_API_KEY, 5)

    async def main() -> tuple[list[Any], Any, list[bool]]:
        async with contextlib.AsyncExitStack() as stack:
            held = [await stack.enter_async_context(connection.leased_client()) for _ in range(130)]
            async with connection.leased_client() as extra:
                assert extra is held[128]  # the third client has room
        async with connection.leased_client() as later:  # all returned: the first again
            pass
        clients = list({id(c): c for c in held}.values())
        await connection.aclose()
        return held, later, [client.is_closed() for client in clients]

    held, later, closed = asyncio.run(main())
    assert all(client is held[0] for client in held[:64])
    assert all(client is held[64] for client in held[64:128]) and held[64] is not held[0]
    assert held[128] not in (held[0], held[64])
    assert later is held[0]
    assert closed == [True, True, True]  # aclose closes every client of the loop
