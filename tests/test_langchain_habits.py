"""LangChain habits get a pointer to chainkit's way, instead of silence or a bare error:
callback methods named on_*, chain, model and tool methods such as invoke and run."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from chainkit import ChainkitError, agents, callbacks, chains, llms, prompts, tools
from chainkit.callbacks import Handler
from chainkit.callbacks.combining import guard
from chainkit.callbacks.errors import HandlerTypeError
from chainkit.chains.errors import ChainAttributeError
from chainkit.llms import FakeLLM
from chainkit.llms.errors import ModelAttributeError
from chainkit.prompts import PromptTemplate
from chainkit.prompts.errors import PromptAttributeError
from chainkit.schema import Message
from chainkit.tools.errors import ToolAttributeError
from tests.support.stub_chains import InputOutputChain
from tests.support.stub_tools import named
from tests.support.typecheck import mypy_errors


class LangChainStyle(Handler):
    """Written for LangChain: chainkit would never call these."""

    def __init__(self) -> None:
        self.heard: list[str] = []

    def on_llm_start(self, serialized: Any, prompts: Any, **kwargs: Any) -> None:
        self.heard.append("llm_start")

    def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        self.heard.append("tool_end")


def executor(**settings: Any) -> agents.Executor:
    llm = FakeLLM([" act\nAction: echo\nAction Input: x", " done\nFinal Answer: ok"])
    return agents.Executor(agents.OneShotAgent(llm, [named("echo", "echoed")]), **settings)


POINTER = (
    "LangChainStyle defines LangChain's callback methods, which chainkit never calls: define "
    "handle_llm_start(self, messages, options) instead of on_llm_start, "
    "handle_tool_end(self, tool, output, tool_call_id) instead of on_tool_end"
)


def test_a_handler_with_langchain_methods_is_refused_where_it_is_given() -> None:
    with pytest.raises(HandlerTypeError) as got:
        executor(callbacks=LangChainStyle())
    assert str(got.value) == f"callbacks of Executor: {POINTER}"
    with pytest.raises(HandlerTypeError, match="instead of on_llm_start"):
        agents.OneShotAgent(FakeLLM([]), [named("echo", "x")], callbacks=[LangChainStyle()])
    ready = executor()
    with pytest.raises(HandlerTypeError, match="instead of on_tool_end"):
        chains.run(ready, "q", callbacks=LangChainStyle())
    fake = FakeLLM(["a"])
    with pytest.raises(HandlerTypeError, match="instead of on_llm_start"):
        fake.generate([Message.user("hi")], callbacks=LangChainStyle())
    assert fake.calls == []


def test_every_langchain_callback_name_points_at_chainkits() -> None:
    class Streams(Handler):
        def on_llm_new_token(self, token: str, **kwargs: Any) -> None: ...

        def on_agent_action(self, action: Any, **kwargs: Any) -> None: ...

        def on_chain_error(self, error: BaseException, **kwargs: Any) -> None: ...

    with pytest.raises(HandlerTypeError) as got:
        guard(Streams())
    message = str(got.value)
    assert "handle_streaming_func(self, chunk) instead of on_llm_new_token" in message
    assert "handle_agent_action(self, action) instead of on_agent_action" in message
    assert "handle_chain_error(self, chain, error) instead of on_chain_error" in message


def test_a_handler_serving_both_libraries_is_accepted_and_hears_chainkits_events() -> None:
    class Both(LangChainStyle):
        def handle_llm_start(self, messages: Sequence[Message], options: Mapping[str, Any]) -> None:
            self.heard.append("handle_llm_start")

        def handle_tool_end(self, tool: str, output: str, tool_call_id: str | None) -> None:
            self.heard.append(f"handle_tool_end {output}")

    both = Both()
    assert chains.run(executor(callbacks=both), "q") == "ok"
    assert both.heard == ["handle_llm_start", "handle_tool_end echoed", "handle_llm_start"]


def test_chainkits_own_handlers_are_accepted() -> None:
    handlers = [callbacks.LogHandler(), callbacks.EventHandler()]
    assert chains.run(executor(callbacks=handlers), "q") == "ok"


# Methods LangChain's chains and models have.


def chain_list() -> list[chains.Chain]:
    llm_chain = chains.LLMChain(PromptTemplate.from_template("{input}"), FakeLLM(["a"]))
    return [executor(), llm_chain, chains.SimpleSequentialChain([llm_chain])]


@pytest.mark.parametrize(
    ("method", "pointer"),
    [
        ("invoke", "use chains.call(chain, {...}) for the outputs dict, or chains.run(chain,"),
        ("ainvoke", "use await chains.acall(chain, {...})"),
        ("run", "use chains.run(chain, input)"),
        ("arun", "use await chains.arun(chain, input)"),
        ("predict", "use chains.predict(chain, {...})"),
        ("apredict", "use await chains.apredict(chain, {...})"),
        ("call", "use chains.call(chain, {...})"),
        ("batch", "use chains.batch(chain, [{...}, ...])"),
        ("stream", "use chains.stream(chain, {...})"),
        ("astream", "use chains.astream(chain, {...})"),
    ],
)
def test_a_langchain_chain_method_names_chainkits_way(method: str, pointer: str) -> None:
    for chain in chain_list():
        kind = type(chain).__name__
        with pytest.raises(ChainAttributeError) as got:
            getattr(chain, method)({"input": "q"})
        assert str(got.value).startswith(
            f"{kind} has no {method} method (as LangChain's have): {pointer}"
        )
        assert isinstance(got.value, AttributeError) and isinstance(got.value, ChainkitError)
        assert not hasattr(chain, method)
        with pytest.raises(ChainAttributeError, match=f"{kind} has no {method} method"):
            getattr(type(chain), method)


def test_other_missing_attributes_fail_as_they_always_did() -> None:
    ready = executor()
    with pytest.raises(AttributeError, match="'Executor' object has no attribute 'colour'") as got:
        ready.colour  # type: ignore[attr-defined]  # noqa: B018
    assert not isinstance(got.value, ChainkitError)


def test_a_chain_of_ones_own_may_define_run() -> None:
    class Runs(InputOutputChain):
        def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
            return {"output": inputs["input"]}

        def run(self, text: str) -> str:
            return chains.run(self, text)

    assert Runs().run("mine") == "mine"


@pytest.mark.parametrize(
    ("method", "pointer"),
    [
        ("invoke", "use llms.call(llm, prompt) for the reply's text, or llm.generate(messages)"),
        ("ainvoke", "use await llms.acall(llm, prompt), or await llm.agenerate(messages)"),
        ("predict", "use llms.call(llm, prompt)"),
        ("apredict", "use await llms.acall(llm, prompt)"),
        ("stream", "streaming_func=print_chunk"),
        ("bind_tools", "agents.ToolCallingAgent(llm, tools)"),
        ("with_fallbacks", "use llms.Fallbacks([llm, backup, ...])"),
    ],
)
def test_a_langchain_model_method_names_chainkits_way(method: str, pointer: str) -> None:
    for llm in (FakeLLM(["a"]), llms.OfflineModel()):
        with pytest.raises(
            ModelAttributeError, match=f"{type(llm).__name__} has no {method}"
        ) as got:
            getattr(llm, method)("hi")
        assert pointer in str(got.value)
        assert isinstance(got.value, AttributeError) and isinstance(got.value, ChainkitError)
        assert not hasattr(llm, method)


@tools.tool
def shout(text: str) -> str:
    """Says the text louder."""
    return text.upper()


def tool_list() -> list[tools.Tool]:
    return [named("echo", "echoed"), shout, tools.Calculator()]


@pytest.mark.parametrize(
    ("method", "pointer"),
    [
        ("run", "use tool.call(input)"),
        ("invoke", "use tool.call(input)"),
        ("arun", "use await tool.acall(input)"),
        ("ainvoke", "use await tool.acall(input)"),
    ],
)
def test_a_langchain_tool_method_names_chainkits_way(method: str, pointer: str) -> None:
    for tool in tool_list():
        kind = type(tool).__name__
        with pytest.raises(ToolAttributeError) as got:
            getattr(tool, method)("2 + 2")
        assert str(got.value) == f"{kind} has no {method} method (as LangChain's have): {pointer}"
        assert isinstance(got.value, AttributeError) and isinstance(got.value, ChainkitError)
        assert not hasattr(tool, method)
        with pytest.raises(ToolAttributeError, match=f"{kind} has no {method} method"):
            getattr(type(tool), method)


def test_a_tool_of_ones_own_may_define_run_and_invoke() -> None:
    class Runs(tools.Tool):
        name = "runs"
        description = "answers its input back"
        return_direct = True

        def call(self, input: str) -> str:
            return f"called {input}"

        def run(self, input: str) -> str:
            return f"ran {input}"

        async def ainvoke(self, input: str) -> str:
            return f"invoked {input}"

    mine = Runs()
    assert mine.run("x") == "ran x"
    assert asyncio.run(mine.ainvoke("y")) == "invoked y"
    with pytest.raises(ToolAttributeError, match="Runs has no invoke method"):
        mine.invoke("z")  # type: ignore[attr-defined]
    llm = FakeLLM([" act\nAction: runs\nAction Input: x"])
    assert chains.run(agents.Executor(agents.OneShotAgent(llm, [mine])), "q") == "called x"


def test_the_pointed_ways_work() -> None:
    assert chains.run(executor(), "q") == "ok"
    assert asyncio.run(chains.acall(executor(), {"input": "q"}))["output"] == "ok"
    assert llms.call(FakeLLM(["a"]), "hi") == "a"
    assert shout.call("hi") == asyncio.run(shout.acall("hi")) == "HI"


USER_CODE = textwrap.dedent(
    """
    from chainkit import agents, chains, llms, tools

    agent = agents.OneShotAgent(llms.FakeLLM(["a"]), tools.builtin_tools())
    executor = agents.Executor(agent, verbose=True)
    executor.invoke({"input": "q"})
    llms.FakeLLM(["a"]).invoke("hi")
    chains.run(agents.Executor(agent, max_iterations=3), "q")
    tools.Calculator().invoke("2 + 2")
    """
)


@pytest.mark.timeout(240)
def test_mypy_still_flags_the_habits(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    errors, output = mypy_errors(tmp_path, USER_CODE)
    assert [line.split(":")[1] for line in errors] == ["5", "6", "7", "9"], output
    assert 'Argument "verbose" to "Executor" has incompatible type' in errors[0]
    assert '"Executor" has no attribute "invoke"' in errors[1]
    assert '"FakeLLM" has no attribute "invoke"' in errors[2]
    assert '"Calculator" has no attribute "invoke"' in errors[3]


# Prompts.


@pytest.mark.parametrize(
    ("method", "pointer"),
    [
        ("invoke", "use prompt.format"),
        ("ainvoke", "prompts format at once: use prompt.format"),
        ("format_prompt", "use prompt.format_messages(**values)"),
    ],
)
def test_a_langchain_prompt_method_names_chainkits_way(method: str, pointer: str) -> None:
    chat = prompts.ChatPromptTemplate([("user", "{input}")])
    for prompt in (PromptTemplate.from_template("{input}"), chat):
        kind = type(prompt).__name__
        with pytest.raises(PromptAttributeError) as got:
            getattr(prompt, method)({"input": "q"})
        assert str(got.value).startswith(f"{kind} has no {method} method (as LangChain's have): ")
        assert pointer in str(got.value)
        assert isinstance(got.value, AttributeError) and isinstance(got.value, ChainkitError)
        assert not hasattr(prompt, method)


def test_langchains_chat_prompt_constructors_name_the_constructor() -> None:
    with pytest.raises(PromptAttributeError) as got:
        prompts.ChatPromptTemplate.from_messages([("system", "be brief"), ("human", "{q}")])  # type: ignore[attr-defined]
    assert str(got.value) == (
        "ChatPromptTemplate has no from_messages method (as LangChain's have): the constructor "
        "takes the messages: ChatPromptTemplate([(role, template), ...])"
    )
    with pytest.raises(
        PromptAttributeError, match=r"ChatPromptTemplate\(\[\('user', template\)\]\)"
    ):
        prompts.ChatPromptTemplate.from_template("{q}")  # type: ignore[attr-defined]
    assert prompts.ChatPromptTemplate([("system", "be brief"), ("human", "{q}")]).format_messages(
        q="hi"
    ) == [Message.system("be brief"), Message.user("hi")]


def test_a_langchain_placeholder_pair_names_messages_placeholder() -> None:
    with pytest.raises(prompts.PromptError) as got:
        prompts.ChatPromptTemplate([("system", "hi"), ("placeholder", "{history}")])
    assert str(got.value) == (
        "('placeholder', '{history}') is LangChain's way to write a placeholder: write "
        "MessagesPlaceholder('history', optional=True)"
    )
    made = prompts.ChatPromptTemplate([prompts.MessagesPlaceholder("history", optional=True)])
    assert made.format_messages() == []


def test_a_langchain_pipeline_is_a_chain_whose_invoke_names_chains_call() -> None:
    for prompt in (
        PromptTemplate.from_template("{q}"),
        prompts.ChatPromptTemplate([("user", "{q}")]),
    ):
        pipeline = prompt | FakeLLM(["a"]) | (lambda reply: reply.content)
        assert chains.run(pipeline, "hi") == "a"
        with pytest.raises(chains.errors.ChainAttributeError, match=r"chains\.call\(chain"):
            pipeline.invoke({"q": "hi"})


def test_langchains_placeholder_keyword_names_chainkits_spelling() -> None:
    with pytest.raises(prompts.errors.PromptTypeError) as got:
        prompts.MessagesPlaceholder(variable_name="history")  # type: ignore[arg-type]
    assert str(got.value) == (
        "MessagesPlaceholder takes its variable's name first: write "
        "MessagesPlaceholder('history'), not variable_name="
    )
    with pytest.raises(prompts.errors.PromptTypeError, match="needs the name of its variable"):
        prompts.MessagesPlaceholder("")
    chat = prompts.ChatPromptTemplate([prompts.MessagesPlaceholder("history", optional=True)])
    assert chat.format_messages(history=[("human", "hi")]) == [Message.user("hi")]
