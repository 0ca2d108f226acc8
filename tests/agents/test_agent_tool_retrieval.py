"""Both agents with `tool_retriever=`: each run offers the model only the tools selected for
its input, a registered tool the model names anyway still runs, and the callbacks hear each
selection."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest

from chainkit import agents, chains, tools
from chainkit.llms import FakeLLM, OfflineModel, OpenAIEmbeddings
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.event_recorder import EventRecorder
from tests.support.openai_server import TEST_API_KEY, OpenAIServer
from tests.support.tool_catalog import TEST_SEED, TEST_WORDING, build


class Named(tools.Tool):
    def __init__(self, name: str, description: str) -> None:
        self.name, self.description = name, description

    def call(self, input: str) -> str:
        return f"{self.name}({input})"


def catalog_tools() -> list[tools.Tool]:
    return [
        Named("get_weather", "Current weather for a city."),
        Named("get_stock_quote", "Latest share price for a ticker."),
        Named("book_flight", "Books a flight to a destination."),
        Named("translate_text", "Translates text between languages."),
        Named("send_email", "Sends an email to a recipient."),
        Named("play_song", "Plays a song by an artist."),
    ]


def selected(events: EventRecorder) -> list[tuple[str, str, list[str] | None]]:
    """The tool selections heard: each start with its query, each end with the tools chosen."""
    return events.described(
        {
            "retriever_start": lambda query: ("start", query, None),
            "retriever_end": lambda query, documents: (
                "end",
                query,
                [tool.name for tool in documents],
            ),
        }
    )


def mrkl_action(tool: str, tool_input: str = "x") -> str:
    return f"Thought: go\nAction: {tool}\nAction Input: {tool_input}"


MRKL_FINAL = "Thought: done\nFinal Answer: ok"


def prompt_of(call) -> str:
    return "\n".join(message.content for message in call.messages)


def listed_tools(prompt: str) -> list[str]:
    line = next(line for line in prompt.splitlines() if "one of [" in line)
    return [name.strip() for name in line.split("[", 1)[1].rstrip("]").split(",") if name]


def oneshot(llm, tool_list=None, **options):
    tool_list = tool_list or catalog_tools()
    retriever = tools.ToolRetriever(tool_list, top_k=2)
    return agents.OneShotAgent(llm, tool_list, tool_retriever=retriever, **options)


def tool_calling(llm, tool_list=None, **options):
    tool_list = tool_list or catalog_tools()
    retriever = tools.ToolRetriever(tool_list, top_k=2)
    return agents.ToolCallingAgent(llm, tool_list, tool_retriever=retriever, **options)


def native_call(name: str, arguments: str = '{"input": "x"}') -> Message:
    return Message.assistant("", [ToolCall(f"call_{name}", FunctionCall(name, arguments))])


def offered_names(call) -> list[str]:
    return [info.name for info in call.options["tools"] or ()]


def test_oneshot_prompt_lists_only_the_selected_tools(mode):
    llm = FakeLLM([mrkl_action("get_weather", "Paris"), MRKL_FINAL])
    selections = EventRecorder()
    executor = agents.Executor(oneshot(llm), return_intermediate_steps=True)
    question = "what is the weather in Paris?"
    outputs = mode.call(executor, {"input": question}, callbacks=selections)
    first, second = (prompt_of(call) for call in llm.calls)
    assert listed_tools(first) == listed_tools(second) == ["get_weather"]
    assert "get_weather: Current weather for a city." in first
    assert "get_stock_quote" not in first and "book_flight" not in second
    assert outputs["intermediate_steps"][0].observation == "get_weather(Paris)"
    # Selected once per run, on the user's input, and reported.
    assert selected(selections) == [("start", question, None), ("end", question, ["get_weather"])]


def test_tool_calling_agent_sends_only_the_selected_tools(mode):
    llm = FakeLLM([native_call("get_stock_quote"), Message.assistant("done")])
    selections = EventRecorder()
    agent = tool_calling(llm)
    executor = agents.Executor(agent)
    question = "share price of Tesla, and its ticker"
    answer = mode.run(executor, question, callbacks=selections)
    assert answer == "done"
    assert [offered_names(call) for call in llm.calls] == [["get_stock_quote"]] * 2
    assert selected(selections)[-1] == ("end", question, ["get_stock_quote"])
    assert len(selected(selections)) == 2
    # The agent's own tool list is unchanged: every tool stays registered.
    assert len(agent.tools) == 6


@pytest.mark.parametrize("make_agent", [oneshot, tool_calling])
def test_a_registered_tool_not_offered_still_runs_and_is_offered_from_then_on(make_agent):
    if make_agent is oneshot:
        replies: list[Any] = [mrkl_action("PLAY_SONG", "jazz"), MRKL_FINAL]
    else:
        replies = [native_call("PLAY_SONG"), Message.assistant("done")]
    llm = FakeLLM(replies)
    selections = EventRecorder()
    executor = agents.Executor(make_agent(llm), return_intermediate_steps=True)
    outputs = chains.call(executor, {"input": "weather in Rome"}, callbacks=selections)
    [step] = outputs["intermediate_steps"]
    assert step.observation.startswith("play_song(")  # ran: no false "not a valid tool"
    # The second chance is a retrieval of its own, on the name the model wrote.
    assert selected(selections) == [
        ("start", "weather in Rome", None),
        ("end", "weather in Rome", ["get_weather"]),
        ("start", "PLAY_SONG", None),
        ("end", "PLAY_SONG", ["play_song"]),
    ]
    if make_agent is oneshot:
        offered = [listed_tools(prompt_of(call)) for call in llm.calls]
    else:
        offered = [offered_names(call) for call in llm.calls]
    assert offered == [["get_weather"], ["get_weather", "play_song"]]


@pytest.mark.parametrize("make_agent", [oneshot, tool_calling])
def test_a_tool_a_later_step_needs_is_offered_from_then_on(make_agent, mode):
    plan = "I will check the weather first, then email it to Bob"
    if make_agent is oneshot:
        replies: list[Any] = [
            f"Thought: {plan}\nAction: get_weather\nAction Input: Rome",
            mrkl_action("send_email", "Bob"),
            MRKL_FINAL,
        ]
    else:
        first = native_call("get_weather")
        replies = [
            Message.assistant(plan, first.tool_calls),
            native_call("send_email"),
            Message.assistant("done"),
        ]
    llm = FakeLLM(replies)
    selections = EventRecorder()
    executor = agents.Executor(make_agent(llm), return_intermediate_steps=True)
    mode.call(executor, {"input": "weather in Rome"}, callbacks=selections)
    if make_agent is oneshot:
        offered = [listed_tools(prompt_of(call)) for call in llm.calls]
    else:
        offered = [offered_names(call) for call in llm.calls]
    # The question named only the weather; the model's reply named the email: offered from
    # the next plan on, once (the step after it selects nothing new).
    assert offered == [["get_weather"], *[["get_weather", "send_email"]] * 2]
    heard = selected(selections)
    assert [event[0] for event in heard] == ["start", "end", "start", "end"]
    assert plan in heard[2][1] and heard[3][2] == ["send_email"]


def test_an_unregistered_tool_is_still_not_valid():
    llm = FakeLLM([mrkl_action("no_such_tool"), MRKL_FINAL])
    executor = agents.Executor(oneshot(llm), return_intermediate_steps=True)
    [step] = chains.call(executor, {"input": "weather"})["intermediate_steps"]
    assert "no_such_tool is not a valid tool" in step.observation
    assert listed_tools(prompt_of(llm.calls[1])) == ["get_weather"]


def test_each_run_selects_for_its_own_input():
    llm = FakeLLM([MRKL_FINAL, MRKL_FINAL, MRKL_FINAL])
    executor = agents.Executor(oneshot(llm))
    for question in ("weather in Oslo", "book a flight to Oslo", "weather in Oslo"):
        chains.run(executor, question)
    assert [listed_tools(prompt_of(call)) for call in llm.calls] == [
        ["get_weather"],
        ["book_flight"],
        ["get_weather"],
    ]


def test_nothing_selected_offers_no_tool():
    llm = FakeLLM([MRKL_FINAL, Message.assistant("hi")])
    assert chains.run(agents.Executor(oneshot(llm)), "hello there") == "ok"
    assert listed_tools(prompt_of(llm.calls[0])) == []
    native = FakeLLM([Message.assistant("hi")])
    assert chains.run(agents.Executor(tool_calling(native)), "hello there") == "hi"
    assert native.calls[0].options["tools"] == []


@pytest.mark.parametrize("make_agent", [oneshot, tool_calling])
def test_the_final_answer_at_a_limit_keeps_the_offer(make_agent):
    if make_agent is oneshot:
        llm = FakeLLM([mrkl_action("get_weather"), "Final Answer: cloudy"])
    else:
        llm = FakeLLM([native_call("get_weather"), Message.assistant("cloudy")])
    executor = agents.Executor(make_agent(llm), max_iterations=1, early_stopping_method="generate")
    assert chains.run(executor, "weather in Lima") == "cloudy"
    if make_agent is oneshot:
        assert listed_tools(prompt_of(llm.calls[1])) == ["get_weather"]
    else:
        assert llm.calls[1].options["tools"] is None  # the final answer is offered no tools


@pytest.mark.timeout(60, method="thread")
def test_under_a_deadline_the_run_still_selects_once():
    llm = FakeLLM([mrkl_action("get_weather"), MRKL_FINAL])
    selections = EventRecorder()
    executor = agents.Executor(oneshot(llm), max_execution_time=30)
    assert chains.run(executor, "weather in Lima", callbacks=selections) == "ok"
    assert [event[0] for event in selected(selections)] == ["start", "end"]
    assert [listed_tools(prompt_of(call)) for call in llm.calls] == [["get_weather"]] * 2


def test_the_agents_own_handler_hears_the_selection():
    selections = EventRecorder()
    llm = FakeLLM([MRKL_FINAL])
    agent = oneshot(llm, callbacks=selections)
    chains.run(agents.Executor(agent), "weather")
    assert selected(selections)[-1] == ("end", "weather", ["get_weather"])


def test_a_custom_prompt_gets_the_tools_of_the_run():
    from chainkit.prompts import PromptTemplate

    prompt = PromptTemplate("Tools:\n{tool_descriptions}\nQ: {question}\n{agent_scratchpad}")
    llm = FakeLLM([MRKL_FINAL])
    chains.run(agents.Executor(oneshot(llm, prompt=prompt)), "send an email to Bob")
    assert prompt_of(llm.calls[0]).startswith(
        "Tools:\nsend_email: Sends an email to a recipient.\nQ: send an email to Bob"
    )


def test_retrievers_that_do_not_fit_the_agent_are_refused():
    tool_list = catalog_tools()
    with pytest.raises(ValueError, match="the retriever lacks play_song"):
        agents.OneShotAgent(
            FakeLLM([]), tool_list, tool_retriever=tools.ToolRetriever(tool_list[:-1])
        )
    with pytest.raises(ValueError, match="the agent lacks play_song"):
        agents.ToolCallingAgent(
            FakeLLM([]), tool_list[:-1], tool_retriever=tools.ToolRetriever(tool_list)
        )
    with pytest.raises(TypeError, match=r"tools\.ToolRetriever"):
        agents.OneShotAgent(FakeLLM([]), tool_list, tool_retriever=tool_list)  # type: ignore[arg-type]
    from chainkit.prompts import PromptTemplate

    two_inputs = PromptTemplate("{tool_names} {a} {b} {agent_scratchpad}")
    with pytest.raises(ValueError, match=r"needs an \{input\} variable"):
        oneshot(FakeLLM([]), prompt=two_inputs)


def test_a_tool_added_to_the_retriever_later_is_not_offered():
    tool_list = catalog_tools()
    retriever = tools.ToolRetriever(tool_list, top_k=2)
    llm = FakeLLM([MRKL_FINAL])
    agent = agents.OneShotAgent(llm, tool_list, tool_retriever=retriever)
    retriever.add(Named("get_weather_alerts", "Weather alerts for a city."))
    chains.run(agents.Executor(agent), "weather alerts for Oslo")
    assert listed_tools(prompt_of(llm.calls[0])) == ["get_weather"]


def test_agents_with_a_retriever_copy_and_pickle():
    import pickle

    agent = oneshot(FakeLLM([MRKL_FINAL]))
    for clone in (copy.deepcopy(agent), pickle.loads(pickle.dumps(agent))):
        assert chains.run(agents.Executor(clone), "weather") == "ok"


def test_finished_and_failed_runs_leave_bounded_records():
    llm = FakeLLM([MRKL_FINAL] * 3 + ["no action here"] * 300)
    agent = oneshot(llm)
    executor = agents.Executor(agent)
    offer = agent._tool_offer
    assert offer is not None
    for _ in range(3):
        chains.run(executor, "weather")
    assert len(offer) == 0
    for _ in range(300):
        with pytest.raises(agents.OutputParserError):
            chains.run(executor, "weather")
    assert len(offer) == offer._runs.LIMIT


# The whole path on 1,000 tools: the offline model picks among the tools offered to it.


@pytest.fixture(scope="module")
def catalog():
    return build(TEST_WORDING, seed=TEST_SEED)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("agent_type", [agents.OneShotAgent, agents.ToolCallingAgent])
def test_offline_model_with_a_retriever_over_1000_tools_in_parallel_runs(catalog, agent_type):
    retriever = tools.ToolRetriever(catalog.tools, top_k=5)
    agent = agent_type(OfflineModel(), catalog.tools, tool_retriever=retriever)
    executor = agents.Executor(agent, return_intermediate_steps=True, max_iterations=2)
    questions = catalog.questions(40, "described", seed=5)
    outputs = chains.batch(executor, [{"input": q.text} for q in questions], max_workers=4)
    called = [result["intermediate_steps"][0].action.tool for result in outputs]
    # Each run chose among the five tools offered for its own question.
    for tool, question in zip(called, questions, strict=True):
        assert tool in [t.name for t in retriever.select(question.text)]
    right = sum(tool == q.tool for tool, q in zip(called, questions, strict=True))
    assert right >= 0.6 * len(questions), right  # the offline model ranks the five itself


def test_an_embedder_is_awaited_in_async_runs(openai_server: OpenAIServer):
    tool_list = catalog_tools()

    async def main() -> str:
        async with OpenAIEmbeddings(
            "embed", base_url=openai_server.base_url, api_key=TEST_API_KEY
        ) as embedder:
            retriever = tools.ToolRetriever(tool_list, top_k=1, embedder=embedder)
            llm = FakeLLM([native_call("get_weather"), Message.assistant("sunny")])
            agent = agents.ToolCallingAgent(llm, tool_list, tool_retriever=retriever)
            answer = await chains.arun(agents.Executor(agent), "wether forcast in Lima")
            assert [offered_names(call) for call in llm.calls] == [["get_weather"]] * 2
            return answer

    assert asyncio.run(main()) == "sunny"
    assert [r.body["input"] for r in openai_server.requests][-1] == ["wether forcast in Lima"]
    assert json.dumps(openai_server.requests[0].body["input"]).count("get_") == 2
