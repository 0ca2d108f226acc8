"""The OpenAI-compatible endpoint, with the `openai` package as its third-party client over real
HTTP: answers, streams, usage, conversations, and the refusals it raises as its own errors."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest

from chainkit import agents, chains, llms, memory, prompts, retrievers, tools
from chainkit._cli.agent import builtin_agent
from chainkit.documents import Document
from chainkit.serving import ServerSettings, create_app
from tests.conftest import FAST_BACKOFF
from tests.support.held_chains import HeldChain
from tests.support.openai_server import Fault, OpenAIServer, Reply
from tests.support.serving import RawStream, call, served

TOKEN = "t0ken-for-chat"
QUESTION = "what is 6 * 7?"
CALCULATE = "Thought: I should multiply.\nAction: calculator\nAction Input: 6 * 7"
ANSWER = "Thought: I know it now.\nFinal Answer: six times seven is 42, as the tool says."
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WAIT = 30.0
USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}

Serve = Callable[..., Any]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Serves a chain; the OpenAI client of it (no retries: each call is one request)."""
    with_servers: list[Any] = []

    def start(chain: chains.Chain, **settings: Any) -> Any:
        context = served(create_app(chain, ServerSettings(token=TOKEN, **settings)))
        url = context.__enter__()
        with_servers.append(context)
        return openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, max_retries=0, timeout=60)

    yield start
    for context in reversed(with_servers):
        context.__exit__(None, None, None)


def scripted_agent(server: OpenAIServer, **executor: Any) -> agents.Executor:
    """The built-in tools' MRKL agent on the loopback server's scripted model."""
    model = llms.OpenAI("loopback-model", base_url=server.base_url, api_key="sk-test", timeout=10)
    agent = agents.OneShotAgent(model, tools.builtin_tools())
    return agents.Executor(agent, **executor)


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def test_an_agent_answers_as_a_model_would(serve: Serve) -> None:
    client = serve(builtin_agent())
    completion = client.chat.completions.create(model="any-name", messages=ask(QUESTION))
    [choice] = completion.choices
    assert choice.message.role == "assistant"
    assert choice.message.content == chains.run(builtin_agent(), QUESTION)
    assert "42" in choice.message.content
    assert choice.finish_reason == "stop"
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    [model] = client.models.list().data
    assert completion.model == model.id == "Executor"


def test_a_stream_sends_the_answer_in_chunks_ending_with_done(serve: Serve) -> None:
    client = serve(builtin_agent())
    chunks = list(client.chat.completions.create(model="m", messages=ask(QUESTION), stream=True))
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    assert text == chains.run(builtin_agent(), QUESTION)
    assert [chunk.choices[0].finish_reason for chunk in chunks][-1] == "stop"
    assert {chunk.id for chunk in chunks} == {chunks[0].id}
    assert {chunk.object for chunk in chunks} == {"chat.completion.chunk"}
    raw = call(
        str(client.base_url).removesuffix("/v1/"),
        "POST",
        "/v1/chat/completions",
        {"messages": ask(QUESTION), "stream": True},
        {"Authorization": f"Bearer {TOKEN}"},
    )
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert raw.text.endswith("data: [DONE]\n\n")


def test_usage_counts_the_tokens_of_every_model_call_of_the_run(
    serve: Serve, openai_server: OpenAIServer
) -> None:
    client = serve(scripted_agent(openai_server))
    openai_server.push(Reply(CALCULATE, usage=USAGE), Reply(ANSWER, usage=USAGE))
    completion = client.chat.completions.create(model="m", messages=ask(QUESTION))
    assert completion.choices[0].message.content == "six times seven is 42, as the tool says."
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (200, 40)
    assert completion.usage.total_tokens == 240


def test_a_stream_writes_the_final_answer_as_it_comes_and_never_the_thoughts(
    serve: Serve, openai_server: OpenAIServer
) -> None:
    client = serve(scripted_agent(openai_server))
    openai_server.push(Reply(CALCULATE, usage=USAGE), Reply(ANSWER, usage=USAGE, chunk_size=5))
    chunks = list(
        client.chat.completions.create(
            model="m",
            messages=ask(QUESTION),
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    pieces = [chunk.choices[0].delta.content for chunk in chunks if chunk.choices]
    written = [piece for piece in pieces if piece]
    assert "".join(written) == "six times seven is 42, as the tool says."
    assert len(written) > 3  # as the model wrote it, not whole at the end
    assert not any("Thought" in piece or "calculator" in piece for piece in written)
    *_, finish, last = chunks
    assert finish.choices[0].finish_reason == "stop"
    assert last.choices == [] and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (200, 40)
    assert all(chunk.usage is None for chunk in chunks[:-1])


def test_earlier_turns_are_the_history_of_a_chain_that_reads_one(
    serve: Serve, openai_server: OpenAIServer
) -> None:
    model = llms.OpenAI("loopback-model", base_url=openai_server.base_url, api_key="sk-t")
    agent = agents.Executor(agents.ToolCallingAgent(model, tools.builtin_tools()))
    client = serve(agent)
    openai_server.push(Reply("You said your name is Ada."))
    conversation = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": "Hello Ada."},
        {"role": "user", "content": [{"type": "text", "text": "What is my name?"}]},
    ]
    completion = client.chat.completions.create(model="m", messages=conversation)
    assert completion.choices[0].message.content == "You said your name is Ada."
    [request] = openai_server.chat_requests()
    sent = [(message["role"], message["content"]) for message in request.body["messages"]]
    assert sent[-4:] == [
        ("system", "Be brief."),
        ("user", "My name is Ada."),
        ("assistant", "Hello Ada."),
        ("user", "What is my name?"),
    ]


def test_a_chat_prompts_reply_streams_token_by_token_with_its_history(
    serve: Serve, openai_server: OpenAIServer
) -> None:
    prompt = prompts.ChatPromptTemplate(
        [("system", "You are terse."), prompts.MessagesPlaceholder("history"), ("user", "{q}")]
    )
    model = llms.OpenAI("loopback-model", base_url=openai_server.base_url, api_key="sk-t")
    client = serve(chains.LLMChain(prompt, model))
    openai_server.push(Reply("Paris — la capitale 🇫🇷 de la France.", chunk_size=3))
    conversation = [
        {"role": "user", "content": "Let us talk about France."},
        {"role": "assistant", "content": "Gladly."},
        {"role": "user", "content": "Its capital?"},
    ]
    chunks = list(client.chat.completions.create(model="m", messages=conversation, stream=True))
    written = [chunk.choices[0].delta.content for chunk in chunks if chunk.choices[0].delta.content]
    assert "".join(written) == "Paris — la capitale 🇫🇷 de la France."
    assert len(written) >= 10
    [request] = openai_server.chat_requests()
    assert [message["content"] for message in request.body["messages"]] == [
        "You are terse.",
        "Let us talk about France.",
        "Gladly.",
        "Its capital?",
    ]


def test_a_chain_without_a_history_gets_the_conversation_as_a_transcript(
    serve: Serve, openai_server: OpenAIServer
) -> None:
    client = serve(scripted_agent(openai_server))
    openai_server.push(Reply("Final Answer: Ada."))
    conversation = [
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": "Hello Ada."},
        {"role": "user", "content": "What is my name?"},
    ]
    completion = client.chat.completions.create(model="m", messages=conversation)
    assert completion.choices[0].message.content == "Ada."
    [request] = openai_server.chat_requests()
    prompt = request.body["messages"][-1]["content"]
    assert "User: My name is Ada.\nAssistant: Hello Ada.\nUser: What is my name?" in prompt


def test_a_chain_with_a_memory_of_its_own_takes_the_new_message_alone(serve: Serve) -> None:
    prompt = prompts.PromptTemplate.from_template("{history}\nHuman: {input}\nAI:")
    chain = chains.LLMChain(prompt, llms.FakeLLM(["hi"]), memory=memory.ConversationBuffer())
    client = serve(chain)
    with pytest.raises(openai.BadRequestError, match="keeps its own memory") as refused:
        client.chat.completions.create(
            model="m",
            messages=[*ask("hello"), {"role": "assistant", "content": "hi"}, *ask("again")],
        )
    assert refused.value.code == "stateful_chain"
    assert client.chat.completions.create(model="m", messages=ask("hello")).choices


def test_an_agent_out_of_steps_finishes_with_length(serve: Serve) -> None:
    client = serve(builtin_agent(max_iterations=1))
    completion = client.chat.completions.create(model="m", messages=ask(QUESTION))
    assert completion.choices[0].finish_reason == "length"
    assert completion.choices[0].message.content == ""
    chunks = list(client.chat.completions.create(model="m", messages=ask(QUESTION), stream=True))
    assert chunks[-1].choices[0].finish_reason == "length"
    assert not any(chunk.choices[0].delta.content for chunk in chunks)


@pytest.mark.parametrize(
    ("fields", "message", "param"),
    [
        ({"messages": []}, "messages must not be empty", "messages"),
        ({"messages": "hi"}, "messages must be an array, got a string", "messages"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "role must be one of", None),
        ({"messages": [{"role": "user", "content": 7}]}, "must be a string or an array", None),
        ({"messages": [{"role": "user"}]}, "must be a string or an array of parts, got null", None),
        (
            {"messages": [{"role": "tool", "content": "4", "tool_call_id": "c"}]},
            "calls its own tools",
            "messages[0].role",
        ),
        (
            {"messages": [*ask("hi"), {"role": "assistant", "content": "yo"}]},
            "the last message must be the user's",
            "messages[1].role",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "http://x/a.png"}}],
                    }
                ]
            },
            "'image_url' content: the served agent takes text parts only",
            "messages[0].content[0]",
        ),
        (
            {
                "messages": ask("hi"),
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
            },
            "calls its own tools",
            "tools",
        ),
        ({"messages": ask("hi"), "n": 2}, "n must be 1", "n"),
        ({"messages": ask("hi"), "stream_options": {"include_usage": True}}, "stream: true", None),
        ({"messages": ask("hi"), "colour": "red"}, "unrecognized request argument", "colour"),
        ({"messages": ask("hi"), "stream": "yes"}, "stream must be a boolean", "stream"),
        (
            {"messages": ask("hi"), "response_format": {"type": "json_object"}},
            "response_format",
            "response_format",
        ),
    ],
)
def test_a_bad_request_raises_the_clients_bad_request_error_with_our_message(
    serve: Serve, fields: dict[str, Any], message: str, param: str | None
) -> None:
    client = serve(builtin_agent())
    body = {"model": "m", **fields}
    with pytest.raises(openai.BadRequestError) as refused:
        client.post("/chat/completions", cast_to=dict, body=body)
    assert message in refused.value.message
    assert refused.value.type == "invalid_request_error"
    if param is not None:
        assert refused.value.param == param
    assert "Traceback" not in str(refused.value.body)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, "invalid_json"),
        (b'[{"role": "user", "content": "hi"}]', 400, "invalid_body"),
        (b'{"messages": [{"role": "user", "content": "' + b"x" * (2 << 20) + b'"}]}', 413, None),
    ],
)
def test_a_body_that_is_no_request_is_refused_in_openais_shape(
    serve: Serve, body: bytes, status: int, code: str | None
) -> None:
    client = serve(builtin_agent())
    base_url = str(client.base_url).removesuffix("/v1/")
    answer = call(
        base_url, "POST", "/v1/chat/completions", body, {**AUTH, "Content-Type": "application/json"}
    )
    assert answer.status == status
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["code"] == (code or "body_too_large") and error["message"]


def test_sampling_settings_a_client_sends_by_habit_are_taken(serve: Serve) -> None:
    client = serve(builtin_agent())
    completion = client.chat.completions.create(
        model="m",
        messages=ask(QUESTION),
        temperature=0.2,
        top_p=0.9,
        max_tokens=50,
        stop=["\n\n"],
        seed=1,
        user="someone",
        n=1,
    )
    assert "42" in (completion.choices[0].message.content or "")


def test_a_wrong_token_raises_the_clients_authentication_error(serve: Serve) -> None:
    client = serve(builtin_agent())
    wrong = client.with_options(api_key="not-the-token")
    with pytest.raises(openai.AuthenticationError):
        wrong.chat.completions.create(model="m", messages=ask(QUESTION))
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()


def translator() -> chains.Chain:
    prompt = prompts.PromptTemplate.from_template("Translate {text} into {language}.")
    return chains.LLMChain(prompt, llms.FakeLLM(["x"]))


def pausing_agent() -> chains.Chain:
    calculator = tools.builtin_tools()[0]
    calculator.requires_approval = True
    return agents.Executor(agents.OneShotAgent(llms.OfflineModel(), [calculator]))


@pytest.mark.parametrize(
    ("make", "why"),
    [(translator, "it takes text, language"), (pausing_agent, "may pause for approval")],
)
def test_a_chain_that_cannot_chat_is_named(
    serve: Serve, make: Callable[[], chains.Chain], why: str
) -> None:
    client = serve(make())
    with pytest.raises(openai.BadRequestError, match=why) as refused:
        client.chat.completions.create(model="m", messages=ask("hi"))
    assert refused.value.code == "not_a_chat_chain"


def test_a_failing_run_is_an_error_without_the_providers_text(
    serve: Serve, openai_server: OpenAIServer
) -> None:
    model = llms.OpenAI(
        "loopback-model", base_url=openai_server.base_url, api_key="sk-secret-0123", max_attempts=1
    )
    client = serve(agents.Executor(agents.OneShotAgent(model, tools.builtin_tools())))
    openai_server.fail(Fault.http(401), Fault.http(401))
    with pytest.raises(openai.InternalServerError, match="the run failed") as failed:
        client.chat.completions.create(model="m", messages=ask(QUESTION))
    assert "sk-secret" not in str(failed.value.body) and "Incorrect" not in failed.value.message
    stream = client.chat.completions.create(model="m", messages=ask(QUESTION), stream=True)
    with pytest.raises(openai.APIError, match="the run failed") as broken:
        list(stream)
    assert "sk-secret" not in str(broken.value.body) and "Incorrect" not in broken.value.message


def held_stream(client: Any, server: OpenAIServer, answer: str) -> Any:
    """A streamed completion whose run is under way, its model's reply held by the loopback
    server after two pieces until the test sets `server.resume` (or 5 s pass)."""
    server.push(Reply(f"Final Answer: {answer}", chunk_size=2, pause_after=2))
    stream = client.chat.completions.create(model="m", messages=ask(answer), stream=True)
    deadline = time.monotonic() + 60
    while not server.chat_requests():
        assert time.monotonic() < deadline, "the run did not reach its model"
        time.sleep(0.01)
    return stream


def test_runs_in_flight_count_against_the_clients_limit(
    serve: Serve, openai_server: OpenAIServer
) -> None:
    client = serve(scripted_agent(openai_server), max_runs_per_client=1)
    first_chunks = iter(held_stream(client, openai_server, "the first answer"))
    with pytest.raises(openai.RateLimitError, match="runs in flight") as limited:
        client.chat.completions.create(model="m", messages=ask("second"))
    assert limited.value.response.headers["retry-after"] == "1"
    openai_server.resume.set()
    rest = "".join(chunk.choices[0].delta.content or "" for chunk in first_chunks)
    assert rest.endswith("the first answer")
    openai_server.push(Reply("Final Answer: the third answer"))
    third = client.chat.completions.create(model="m", messages=ask("third"))
    assert third.choices[0].message.content == "the third answer"


def test_a_client_that_leaves_mid_stream_frees_its_place(
    serve: Serve, openai_server: OpenAIServer
) -> None:
    client = serve(scripted_agent(openai_server), max_runs_per_client=1)
    held_stream(client, openai_server, "never read to its end").close()
    openai_server.push(Reply("Final Answer: the next answer"))
    deadline = time.monotonic() + 60
    while True:  # the server frees the place once it hears the client went away
        try:
            answer = client.chat.completions.create(model="m", messages=ask("next"))
            break
        except openai.RateLimitError:
            assert time.monotonic() < deadline, "the place of a client that left was kept"
            time.sleep(0.05)
    assert answer.choices[0].message.content == "the next answer"
    openai_server.resume.set()


def test_an_answer_a_retry_rewrites_after_part_of_it_was_streamed_is_an_error(
    serve: Serve, openai_server: OpenAIServer
) -> None:
    model = llms.OpenAI(
        "loopback-model", base_url=openai_server.base_url, api_key="sk-t", backoff=FAST_BACKOFF
    )
    client = serve(agents.Executor(agents.OneShotAgent(model, tools.builtin_tools())))
    cut_short = Reply("Final Answer: the first answer, cut short", chunk_size=3)
    openai_server.fail(Fault.cut(after_chunks=10, reply=cut_short))
    openai_server.push(Reply("Final Answer: another answer"))
    stream = client.chat.completions.create(model="m", messages=ask(QUESTION), stream=True)
    with pytest.raises(openai.APIError, match="retried and wrote another answer") as rewritten:
        list(stream)
    assert rewritten.value.code == "answer_rewritten"


def test_a_chain_that_is_no_agent_answers_with_its_answer_output_whole(
    serve: Serve, openai_server: OpenAIServer
) -> None:
    notes = retrievers.Lexical.from_documents(
        [
            Document("The tortoise sleeps through the winter in a box of straw.", {}, "pets.md@0"),
            Document("Bread rises because yeast turns sugar into gas.", {}, "baking.md@0"),
        ]
    )
    model = llms.OpenAI("loopback-model", base_url=openai_server.base_url, api_key="sk-t")
    client = serve(chains.answer_chain(notes, model))
    answer = "Final Answer: in a box of straw [pets.md@0]"  # no agent's: all of it is the answer
    openai_server.push(Reply("Where does the tortoise sleep in winter?"), Reply(answer))
    conversation = [
        {"role": "user", "content": "Tell me of the tortoise."},
        {"role": "assistant", "content": "It is a slow pet."},
        {"role": "user", "content": "Where does it sleep?"},
    ]
    chunks = list(client.chat.completions.create(model="m", messages=conversation, stream=True))
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks) == answer
    rewrite, _ = openai_server.chat_requests()
    assert "It is a slow pet." in json.dumps(rewrite.body["messages"])


CHAT = {"model": "m", "messages": ask("hi"), "stream": True}


def test_a_client_leaving_a_streamed_completion_cancels_its_run() -> None:
    chain = HeldChain()
    with served(create_app(chain, ServerSettings(token=TOKEN))) as url:
        stream = RawStream(url, "/v1/chat/completions", CHAT, AUTH)
        stream.read_until(b'"role":"assistant"')
        assert chain.started.wait(WAIT)
        stream.close()
        assert chain.cancelled.wait(WAIT), "the run went on after its client left"
        assert not chain.finished.is_set()


def test_a_quiet_streamed_completion_gets_keepalive_comments_its_client_skips() -> None:
    chain = HeldChain()
    settings = ServerSettings(token=TOKEN, keepalive_seconds=0.05)
    with served(create_app(chain, settings)) as url:
        stream = RawStream(url, "/v1/chat/completions", CHAT, AUTH)
        stream.read_until(b": ping\n\n")
        assert chain.started.is_set() and not chain.finished.is_set()
        chain.release.set()
        body = stream.read_until(b"data: [DONE]\n\n")
        stream.close()
        assert b"done: hi" in body.split(b": ping\n\n")[-1]
        # The openai package reads a stream with comments in it as it reads OpenAI's.
        chain.release.clear()
        client: Any = openai.OpenAI(
            base_url=f"{url}/v1", api_key=TOKEN, max_retries=0, timeout=WAIT
        )
        chunks = client.chat.completions.create(model="m", messages=ask("again"), stream=True)
        first = next(iter(chunks))
        assert first.choices[0].delta.role == "assistant"
        stream = RawStream(url, "/v1/chat/completions", CHAT, AUTH)  # a ping is written...
        stream.read_until(b": ping\n\n")  # ...to each quiet stream, the client's too
        stream.close()
        chain.release.set()
        text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
        assert text == "done: again"
