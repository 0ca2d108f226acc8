import io

import pytest

from chainkit import agents, callbacks, chains, llms, tools
from chainkit.agents import OneShotAgent
from chainkit.llms import FakeLLM
from chainkit.prompts import PromptTemplate


class RandomNumberTool(tools.Tool):
    name = "随机数计算工具"
    description = "用于获取随机数"

    def call(self, input: str) -> str:
        return "1024"


def run_card_example(llm, stream):
    # The design card's example, as written (LogHandler pointed at a buffer to inspect it).
    agent = agents.OneShotAgent(llm, [RandomNumberTool()])
    executor = agents.Executor(agent, callbacks=callbacks.LogHandler(stream))
    return chains.run(executor, "告诉我一个随机数")


def test_card_example_with_fake_llm():
    llm = FakeLLM(
        [
            " 我需要获取一个随机数\nAction: 随机数计算工具\nAction Input: 随机数",
            " 我现在知道答案了\nFinal Answer: 随机数是 1024",
        ]
    )
    trace = io.StringIO()
    assert run_card_example(llm, trace) == "随机数是 1024"
    assert "Observation: 1024\nThought:" in llm.calls[1].messages[0].content
    assert "tool end: 随机数计算工具 output='1024'" in trace.getvalue()


def test_card_example_with_offline_model():
    trace = io.StringIO()
    answer = run_card_example(llms.OfflineModel(), trace)
    assert answer == "1024"
    assert "tool start: 随机数计算工具" in trace.getvalue()


def test_card_example_verbatim_prints_answer(capsys):
    llm = FakeLLM([" 需要工具\nAction: 随机数计算工具\nAction Input: x", " 好\nFinal Answer: 1024"])
    from chainkit import agents, callbacks, chains, tools  # noqa: F401  (as the card imports)

    agent = agents.OneShotAgent(llm, [RandomNumberTool()])
    executor = agents.Executor(agent, callbacks=callbacks.LogHandler())
    print(chains.run(executor, "告诉我一个随机数"))
    captured = capsys.readouterr()
    assert captured.out == "1024\n"
    assert "   tool end: 随机数计算工具 output='1024'\n" in captured.err


def test_default_prompt_lists_tools_in_mrkl_format():
    class Weather(tools.Tool):
        name = "weather"
        description = "current weather for a city"

        def call(self, input: str) -> str:
            return "sunny"

    llm = FakeLLM([" done\nFinal Answer: ok"])
    agent = OneShotAgent(llm, [RandomNumberTool(), Weather()])
    chains.run(agents.Executor(agent), "北京天气")
    prompt = llm.calls[0].messages[0].content
    assert prompt.startswith("Answer the following questions")
    assert "随机数计算工具: 用于获取随机数\nweather: current weather for a city" in prompt
    assert "one of [随机数计算工具, weather]" in prompt
    for keyword in [
        "Question:",
        "Thought:",
        "Action:",
        "Action Input:",
        "Observation:",
        "Final Answer:",
    ]:
        assert keyword in prompt
    assert prompt.endswith("Question: 北京天气\nThought:")
    assert agent.input_keys == ["input"] and agent.output_keys == ["output"]


def test_prefix_format_instructions_suffix_overrides():
    llm = FakeLLM([" Final Answer: ok"])
    agent = OneShotAgent(
        llm,
        [RandomNumberTool()],
        prefix="你可以使用这些工具：\n{tool_descriptions}",
        format_instructions="格式：Action: [{tool_names}]",
        suffix="问题：{input}\n{agent_scratchpad}",
    )
    chains.run(agents.Executor(agent), "随机")
    assert llm.calls[0].messages[0].content == (
        "你可以使用这些工具：\n随机数计算工具: 用于获取随机数\n\n"
        "格式：Action: [随机数计算工具]\n\n问题：随机\n"
    )


def test_custom_prompt():
    prompt = PromptTemplate.from_template("Q={input} S={agent_scratchpad} Tone={tone}")
    llm = FakeLLM([" Final Answer: ok"])
    agent = OneShotAgent(llm, [RandomNumberTool()], prompt=prompt, output_key="answer")
    outputs = chains.call(agents.Executor(agent), {"input": "q", "tone": "dry"})
    assert outputs == {"answer": "ok"}
    assert llm.calls[0].messages[0].content == "Q=q S= Tone=dry"
    with pytest.raises(ValueError, match="agent_scratchpad"):
        OneShotAgent(llm, [RandomNumberTool()], prompt=PromptTemplate.from_template("{input}"))
    with pytest.raises(ValueError, match="not both"):
        OneShotAgent(llm, [RandomNumberTool()], prompt=prompt, suffix="x")


def test_needs_tools_with_unique_names():
    with pytest.raises(ValueError, match="at least one tool"):
        OneShotAgent(FakeLLM([]), [])
    with pytest.raises(ValueError, match="two tools are named '随机数计算工具'"):
        OneShotAgent(FakeLLM([]), [RandomNumberTool(), RandomNumberTool()])

    class Nameless(tools.Tool):
        pass

    with pytest.raises(ValueError, match="empty name"):
        OneShotAgent(FakeLLM([]), [Nameless()])


def test_custom_prompt_gets_tool_names_and_descriptions():
    prompt = PromptTemplate.from_template(
        "Tools: {tool_names}\n{tool_descriptions}\nQ: {input}\n{agent_scratchpad}"
    )
    llm = FakeLLM([" Final Answer: ok"])
    agent = OneShotAgent(llm, [RandomNumberTool()], prompt=prompt)
    assert agent.input_keys == ["input"]
    chains.run(agents.Executor(agent), "q")
    assert llm.calls[0].messages[0].content == (
        "Tools: 随机数计算工具\n随机数计算工具: 用于获取随机数\nQ: q\n"
    )


def test_tools_must_be_a_list_of_tools():
    with pytest.raises(TypeError, match="tools must be a list of Tool, got RandomNumberTool"):
        OneShotAgent(FakeLLM([]), RandomNumberTool())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tools must be Tool instances, got str"):
        OneShotAgent(FakeLLM([]), ["calculator"])  # type: ignore[list-item]


def test_made_up_observation_never_reaches_the_next_prompt():
    llm = FakeLLM(
        [
            " Need it\nAction: 随机数计算工具\nAction Input: x\nObservation: FAKE 999\n"
            "Thought: done\nFinal Answer: 999",
            " Final Answer: 1024",
        ]
    )
    agent = OneShotAgent(llm, [RandomNumberTool()])
    assert chains.run(agents.Executor(agent), "q") == "1024"
    second = llm.calls[1].messages[0].content
    assert "FAKE 999" not in second and "999" not in second
    assert second.endswith("Action Input: x\nObservation: 1024\nThought:")
