"""Wiring of sequences, memory and run/predict: every mistake that can be known before a chain
runs is raised before it runs, and nothing is overwritten or saved that should not be."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chainkit import chains
from chainkit.chains import Chain, LLMChain, SequentialChain, SimpleSequentialChain
from chainkit.chains.errors import ChainWiringError, OutputNotStringError, SingleKeyError
from chainkit.llms import FakeLLM
from chainkit.memory import ConversationBuffer
from chainkit.memory.errors import MemoryKeyError
from chainkit.prompts import PromptTemplate
from tests.support.event_recorder import EventRecorder


def llm_chain(template: str, responses: list[str], **kwargs: Any) -> tuple[LLMChain, FakeLLM]:
    fake = FakeLLM(responses)
    return LLMChain(PromptTemplate.from_template(template), fake, **kwargs), fake


class Recorder(Chain):
    """Returns `outputs` and records every call, to prove a check came before the run."""

    def __init__(self, inputs: list[str], outputs: dict[str, Any]) -> None:
        self.inputs = inputs
        self.declared = list(outputs)
        self.outputs = outputs
        self.calls: list[dict[str, Any]] = []

    @property
    def input_keys(self) -> list[str]:
        return self.inputs

    @property
    def output_keys(self) -> list[str]:
        return self.declared

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        self.calls.append(dict(inputs))
        return dict(self.outputs)


def seen(events: EventRecorder) -> list[tuple[str, str]]:
    """The chain events as these tests read them."""
    return events.described(
        {
            "chain_start": lambda chain, inputs: ("start", chain),
            "chain_end": lambda chain, outputs: ("end", chain),
            "chain_error": lambda chain, error: ("error", type(error).__name__),
        }
    )


def run_both(chain: Chain, value: Any) -> list[str]:
    """`chains.run` and `chains.arun` on the same chain, in that order."""
    return [chains.run(chain, value), asyncio.run(chains.arun(chain, value))]


# --- a sub-chain's own memory fills its inputs ----------------------------------------------


def test_a_sub_chain_whose_memory_fills_an_input_is_accepted_in_a_sequence():
    summarize, _ = llm_chain("Summarize: {text}", ["S1", "S2"], output_key="summary")
    memory = ConversationBuffer(input_key="summary")
    chat, chat_llm = llm_chain(
        "{history}|{summary}", ["R1", "R2"], output_key="reply", memory=memory
    )
    sequence = SequentialChain([summarize, chat], input_variables=["text"])
    assert sequence.input_keys == ["text"] and sequence.output_keys == ["reply"]
    assert run_both(sequence, "long text") == ["R1", "R2"]
    assert chat_llm.calls[1].messages[0].content == "Human: S1\nAI: R1|S2"


def test_a_sub_chain_whose_memory_fills_an_input_is_accepted_in_a_simple_sequence():
    upper, _ = llm_chain("{x}", ["A", "B"])
    chat, chat_llm = llm_chain("{history}|{input}", ["R1", "R2"], memory=ConversationBuffer())
    simple = SimpleSequentialChain([upper, chat])
    assert run_both(simple, "go") == ["R1", "R2"]
    assert chat_llm.calls[1].messages[0].content == "Human: A\nAI: R1|B"


def test_a_memory_that_fills_nothing_the_chain_needs_still_leaves_one_input():
    two_inputs, _ = llm_chain("{history}{a}{b}", [], memory=ConversationBuffer())
    with pytest.raises(ChainWiringError, match=r"\['a', 'b'\] besides its memory"):
        SimpleSequentialChain([two_inputs])


# --- memory mistakes are found when the sequence is built --------------------------------


def test_a_sub_chain_memory_that_cannot_tell_its_input_is_refused_when_built():
    summarize, _ = llm_chain("{text}", [], output_key="summary")
    chat, _ = llm_chain("{history}{summary}", [], memory=ConversationBuffer())
    # chains.call gives a sub-chain every value known so far: text and summary.
    with pytest.raises(ChainWiringError) as caught:
        SequentialChain([summarize, chat], input_variables=["text"])
    message = str(caught.value)
    assert "chain 1 (LLMChain)" in message and "['summary', 'text']" in message
    assert "input_key" in message
    assert isinstance(caught.value.__cause__, MemoryKeyError)


def test_the_sequence_memory_output_ambiguity_is_refused_when_built():
    first, first_llm = llm_chain("{title}", ["syn"], output_key="synopsis")
    second, _ = llm_chain("{synopsis}", ["rev"], output_key="review")
    with pytest.raises(ChainWiringError, match=r"sequence's memory.*\['review', 'synopsis'\]"):
        SequentialChain(
            [first, second],
            input_variables=["title"],
            output_variables=["synopsis", "review"],
            memory=ConversationBuffer(),
        )
    assert first_llm.calls == []
    memory = ConversationBuffer(output_key="review")
    sequence = SequentialChain(
        [first, second],
        input_variables=["title"],
        output_variables=["synopsis", "review"],
        memory=memory,
    )
    chains.call(sequence, {"title": "Dune"})
    assert memory.buffer_text() == "Human: Dune\nAI: rev"


def test_a_memory_output_key_that_no_chain_returns_is_refused_when_built():
    first, _ = llm_chain("{title}", [], output_key="synopsis")
    with pytest.raises(ChainWiringError, match="output key 'answer' not found"):
        SequentialChain(
            [first], input_variables=["title"], memory=ConversationBuffer(output_key="answer")
        )


def test_a_sub_chain_memory_shadowed_by_a_known_value_is_refused():
    reads, _ = llm_chain("{history}{q}", [], memory=ConversationBuffer(input_key="q"))
    with pytest.raises(
        ChainWiringError, match=r"memory variable\(s\) \['history'\].*never be read"
    ):
        SequentialChain([reads], input_variables=["q", "history"])


# --- chains.call, run and predict: checks before the chain runs or saves -------------------


def test_a_memory_output_key_the_chain_does_not_return_fails_before_the_model(mode):
    memory = ConversationBuffer(output_key="answer")
    chain, fake = llm_chain("{history}{input}", ["never"], memory=memory)
    with pytest.raises(MemoryKeyError, match="output key 'answer' not found"):
        mode.run(chain, "q")
    assert fake.calls == [] and memory.messages == []


@pytest.mark.parametrize("function", ["run", "arun", "predict", "apredict"])
def test_run_refuses_a_chain_with_several_outputs_before_running_it(function):
    chain = Recorder(["q"], {"a": "x", "b": "y"})
    call = getattr(chains, function)
    argument = "x" if function.endswith("run") else {"q": "x"}
    with pytest.raises(SingleKeyError, match=r"exactly one output key; Recorder has \['a', 'b'\]"):
        result = call(chain, argument)
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    assert chain.calls == []


class Words:
    def parse(self, text: str) -> list[str]:
        return text.split()


@pytest.mark.parametrize("function", ["run", "arun", "predict", "apredict"])
def test_a_non_string_output_is_refused_before_memory_saves_it(function, events):
    memory = ConversationBuffer()
    chain, _ = llm_chain(
        "{history}{input}", ["a b"], output_parser=Words(), memory=memory, callbacks=events
    )
    call = getattr(chains, function)
    argument = "q" if function.endswith("run") else {"input": "q"}
    with pytest.raises(OutputNotStringError, match="returned list under 'text'"):
        result = call(chain, argument)
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    assert memory.messages == []
    assert seen(events) == [("start", "LLMChain"), ("error", "OutputNotStringError")]
    # chains.call has no such rule: the list is the output, and it is remembered.
    memory_call = ConversationBuffer()
    listing, _ = llm_chain("{history}{input}", ["a b"], output_parser=Words(), memory=memory_call)
    assert chains.call(listing, {"input": "q"}) == {"text": ["a", "b"]}
    assert len(memory_call.messages) == 2


# --- names given as a str, and keys a chain did not declare ---------------------------------


@pytest.mark.parametrize("argument", ["input_variables", "output_variables"])
def test_a_str_where_a_list_of_names_belongs_is_refused(argument):
    chain, _ = llm_chain("{topic}", [], output_key="text")
    kwargs: dict[str, Any] = {"input_variables": ["topic"], "output_variables": ["text"]}
    kwargs[argument] = "topic" if argument == "input_variables" else "text"
    name = kwargs[argument]
    with pytest.raises(TypeError, match=rf"{argument} must be a list of names.*write \['{name}'\]"):
        SequentialChain([chain], **kwargs)


# The constructors with their types unchecked, to give wrong types on purpose.
untyped_sequential: Any = SequentialChain
untyped_simple: Any = SimpleSequentialChain


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda c: untyped_sequential([c], input_variables=[1]), "must hold str names, got int"),
        (lambda c: untyped_sequential([c], input_variables=None), "must be a list of names"),
        (lambda c: untyped_sequential(c, input_variables=["x"]), "needs a list of chains"),
        (lambda c: untyped_sequential(iter([c]), input_variables=["x"]), "list_iterator"),
        (lambda c: untyped_sequential([c, "x"], input_variables=["x"]), r"chains\[1\] is not a"),
        (lambda c: untyped_simple([c, None]), r"chains\[1\] is not a Chain, got NoneType"),
    ],
)
def test_wrong_types_are_refused_when_built(build, message):
    chain: Any = llm_chain("{x}", [])[0]
    with pytest.raises(TypeError, match=message):
        build(chain)


def test_a_sub_chain_returning_an_undeclared_key_may_not_overwrite_a_value(mode):
    sneaky = Recorder(["topic"], {"summary": "s"})
    reader = Recorder(["summary", "topic"], {"review": "r"})
    sequence = SequentialChain([sneaky, reader], input_variables=["topic"])
    sneaky.outputs = {"summary": "s", "topic": "overwritten"}  # "topic" is not declared
    with pytest.raises(ChainWiringError) as caught:
        mode.call(sequence, {"topic": "cats"})
    assert "chain 0 (Recorder)" in str(caught.value) and "['topic']" in str(caught.value)
    assert reader.calls == []


def test_an_undeclared_new_key_flows_on_as_before():
    extra = Recorder(["topic"], {"summary": "s"})
    sequence = SequentialChain([extra], input_variables=["topic"])
    extra.outputs = {"summary": "s", "note": "n"}
    assert chains.call(sequence, {"topic": "t"}) == {"summary": "s"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompt": "Tell me about {topic}"}, "prompt must be a prompt template"),
        ({"llm": "gpt-4o-mini"}, "llm must be a model"),
        ({"output_key": ""}, "output_key must be a non-empty str"),
        ({"output_parser": str.split}, "output_parser must be an OutputParser"),
        ({"memory": {"history": ""}}, "memory must be a Memory"),
    ],
)
def test_llm_chain_refuses_wrong_parts_when_built(kwargs, message):
    parts: dict[str, Any] = {
        "prompt": PromptTemplate.from_template("{topic}"),
        "llm": FakeLLM([]),
        **kwargs,
    }
    with pytest.raises(TypeError, match=message):
        LLMChain(**parts)


def test_sequence_memory_is_known_to_its_chains_and_may_not_shadow_inputs():
    memory = ConversationBuffer(input_key="x", output_key="t")
    reads_history = LLMChain(
        PromptTemplate.from_template("{history}/{x}"), FakeLLM(["one", "two"]), output_key="t"
    )
    seq = SequentialChain([reads_history], input_variables=["x"], memory=memory)
    chains.call(seq, {"x": "a"})
    chains.call(seq, {"x": "b"})
    assert reads_history.llm.calls[1].messages[0].content == "Human: a\nAI: one/b"  # type: ignore[attr-defined]
    with pytest.raises(ChainWiringError, match=r"\['history'\] are also memory variables"):
        SequentialChain([reads_history], input_variables=["x", "history"], memory=memory)


def test_async_sequence_forwards_options():
    first = LLMChain(PromptTemplate.from_template("{x}"), FakeLLM(["s"]), output_key="s")
    seq = SequentialChain([first], input_variables=["x"])
    asyncio.run(chains.acall(seq, {"x": "1"}, stop=["STOP"], seed=9))
    assert first.llm.calls[0].options["stop"] == ["STOP"]  # type: ignore[attr-defined]
    assert first.llm.calls[0].options["seed"] == 9  # type: ignore[attr-defined]
