"""Hostile tests for the chains API: every check that can be made before work starts is made
before it starts, handlers that are none are refused wherever handlers are taken, and chain
events pair up."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading

import pytest

from chainkit import callbacks, chains, tools
from chainkit.chains import Chain, LLMChain, SequentialChain, SimpleSequentialChain
from chainkit.chains.errors import MissingInputKeysError, OutputsTypeError, SingleKeyError
from chainkit.llms import FakeLLM, OpenAIEmbeddings
from chainkit.llms.errors import UnknownOptionError
from chainkit.memory import ConversationBuffer
from chainkit.memory.errors import MemoryKeyError
from chainkit.prompts import PromptTemplate
from chainkit.schema import Message
from tests.support.event_recorder import EventRecorder
from tests.support.openai_server import TEST_API_KEY

NOT_HANDLERS = [print, "LogHandler", 3, [callbacks.LogHandler(), print], (None, object())]
NOT_A_HANDLER = r"callbacks must be a chainkit\.callbacks\.Handler, a list of them, or None; got"


class Work(Chain):
    """Records each call; outputs `keys_out`, each the input text."""

    def __init__(self, keys_in=("text",), keys_out=("out",)):
        self.keys_in = list(keys_in)
        self.keys_out = list(keys_out)
        self.done = []
        self._lock = threading.Lock()

    @property
    def input_keys(self):
        return self.keys_in

    @property
    def output_keys(self):
        return self.keys_out

    def _call(self, inputs, **options):
        with self._lock:
            self.done.append(dict(inputs))
        return {key: str(inputs[self.keys_in[0]]) for key in self.keys_out}


def names(events: EventRecorder) -> list[tuple[str, str]]:
    """The chain and model events as these tests read them."""
    return events.described(
        {
            "chain_start": lambda chain, inputs: ("start", chain),
            "chain_end": lambda chain, outputs: ("end", chain),
            "chain_error": lambda chain, error: ("error", chain),
            "llm_start": lambda messages, options: ("llm start", ""),
            "llm_end": lambda message: ("llm end", ""),
        }
    )


def llm_chain(responses=("fine",), template="Tell me about {topic}", **options):
    fake = FakeLLM(list(responses))
    return LLMChain(PromptTemplate.from_template(template), fake, **options), fake


# Handlers that are none are refused, before any work, everywhere handlers are taken.


@pytest.mark.timeout(20)
@pytest.mark.parametrize("bad", NOT_HANDLERS)
@pytest.mark.parametrize("function", ["call", "run", "predict", "batch"])
def test_a_callbacks_option_that_is_no_handler_is_refused_before_any_work(function, bad, mode):
    chain, fake = llm_chain()
    inputs = {
        "call": {"topic": "t"},
        "run": "t",
        "predict": {"topic": "t"},
        "batch": [{"topic": "t"}],
    }[function]
    with pytest.raises(TypeError, match=NOT_A_HANDLER):
        mode.drive(function, chain, inputs, callbacks=bad)
    assert fake.calls == []


@pytest.mark.timeout(20)
@pytest.mark.parametrize("bad", NOT_HANDLERS)
def test_a_model_refuses_callbacks_that_are_no_handler_before_calling(bad):
    fake = FakeLLM(["hi"])
    with pytest.raises(TypeError, match=NOT_A_HANDLER):
        fake.generate([Message.user("q")], callbacks=bad)
    with pytest.raises(TypeError, match=NOT_A_HANDLER):
        asyncio.run(fake.agenerate([Message.user("q")], callbacks=bad))
    assert fake.calls == []


def test_a_handler_class_given_for_an_instance_is_named():
    chain, fake = llm_chain()
    with pytest.raises(TypeError, match=r"pass an instance, LogHandler\(\), not the class"):
        chains.run(chain, "t", callbacks=callbacks.LogHandler)  # type: ignore[arg-type]
    assert fake.calls == []


def test_embeddings_refuse_callbacks_that_are_no_handler_before_any_request(openai_server):
    embeddings = OpenAIEmbeddings(base_url=openai_server.base_url, api_key=TEST_API_KEY)
    try:
        with pytest.raises(TypeError, match=NOT_A_HANDLER):
            embeddings.embed_query("text", callbacks=print)  # type: ignore[arg-type]
    finally:
        embeddings.close()
    assert openai_server.requests == []


@pytest.mark.parametrize("bad", NOT_HANDLERS)
def test_chains_refuse_a_handler_that_is_no_handler_when_built(bad):
    prompt = PromptTemplate.from_template("{topic}")
    with pytest.raises(TypeError, match="callbacks of LLMChain must be a chainkit"):
        LLMChain(prompt, FakeLLM([]), callbacks=bad)
    with pytest.raises(TypeError, match="callbacks of SequentialChain must be"):
        SequentialChain([Work()], input_variables=["text"], callbacks=bad)
    with pytest.raises(TypeError, match="callbacks of SimpleSequentialChain must be"):
        SimpleSequentialChain([Work()], callbacks=bad)
    chain = Work()
    with pytest.raises(TypeError, match="callbacks of Work must be"):
        chain.callbacks = bad


@pytest.mark.timeout(20)
def test_lists_of_handlers_are_accepted_everywhere(mode):
    own, first, second = EventRecorder(), EventRecorder(), EventRecorder()
    chain, _ = llm_chain(("fine", "again"), callbacks=[own])
    assert mode.run(chain, "t", callbacks=[first, second]) == "fine"
    assert names(own) == names(first) == names(second)
    assert names(own) == [
        ("start", "LLMChain"),
        ("llm start", ""),
        ("llm end", ""),
        ("end", "LLMChain"),
    ]
    heard = EventRecorder()
    FakeLLM(["x"]).generate([Message.user("q")], callbacks=(heard,))
    assert names(heard) == [("llm start", ""), ("llm end", "")]
    assert chain.callbacks == [own]
    assert chain.handler is not None and chain.handler.handlers == [own]
    assert mode.run(chain, "t", callbacks=[]) == "again"  # an empty list: no one
    assert len(names(own)) == 8


# Every check that can be made before work starts is made before it starts.


@pytest.mark.timeout(20)
def test_run_and_predict_refuse_several_outputs_before_the_chain_runs(mode):
    chain = Work(keys_out=("a", "b"))
    with pytest.raises(SingleKeyError, match=r"run\(\) needs a chain with exactly one output"):
        mode.run(chain, "x")
    with pytest.raises(SingleKeyError, match=r"predict\(\) needs a chain with exactly one output"):
        mode.predict(chain, {"text": "x"})
    assert chain.done == []


class Returns(Work):
    """A chain whose `_call` returns `outputs`, whatever it is."""

    def __init__(self, outputs):
        super().__init__()
        self.outputs = outputs

    def _call(self, inputs, **options):
        super()._call(inputs)
        return self.outputs


@pytest.mark.timeout(20)
@pytest.mark.parametrize("outputs", [None, "out", ["out"], 42], ids=repr)
def test_a_chain_returning_no_dict_is_named_and_nothing_is_saved(mode, outputs, events):
    memory = ConversationBuffer(input_key="text", output_key="out")
    chain = Returns(outputs)
    chain.memory = memory
    got = type(outputs).__name__
    expected = rf"Returns\._call must return a dict of output key to value, got {got}"
    with pytest.raises(OutputsTypeError, match=expected):
        mode.call(chain, {"text": "x"}, callbacks=events)
    assert len(chain.done) == 1 and memory.load_memory_variables({}) == {"history": ""}
    assert [name for name, *_ in events.heard()] == ["chain_start", "chain_error"]


@pytest.mark.timeout(20)
def test_a_memory_that_could_not_save_fails_before_the_chain_runs(mode):
    named = Work(keys_out=("out",))
    named.memory = ConversationBuffer(memory_key="history", output_key="answer")
    named.keys_in = ["text", "history"]
    with pytest.raises(MemoryKeyError, match=r"output key 'answer' not found; got \['out'\]"):
        mode.call(named, {"text": "x"})
    ambiguous = Work(keys_out=("a", "b"))
    ambiguous.memory = ConversationBuffer(memory_key="history")
    ambiguous.keys_in = ["text", "history"]
    with pytest.raises(MemoryKeyError, match=r"which output key to remember among \['a', 'b'\]"):
        mode.call(ambiguous, {"text": "x"})
    assert named.done == ambiguous.done == []


def test_an_llm_chain_refuses_a_memory_its_prompt_does_not_read():
    with pytest.raises(ValueError, match=r"does not use memory variable\(s\) \['history'\]"):
        LLMChain(
            PromptTemplate.from_template("Answer {input}"),
            FakeLLM([]),
            memory=ConversationBuffer(),
        )


@pytest.mark.timeout(20)
def test_unknown_options_are_refused_before_the_first_chain_of_a_sequence(mode):
    first = Work(keys_in=("text",), keys_out=("topic",))
    second, fake = llm_chain(output_key="answer")
    sequence = SequentialChain([first, second], input_variables=["text"])
    with pytest.raises(UnknownOptionError, match="'stop_words'; use stop"):
        mode.call(sequence, {"text": "x"}, stop_words=["a"], stop=["b"])
    assert first.done == [] and fake.calls == []


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("items", "error", "message"),
    [
        ([{"text": "a"}, "b", {"text": "c"}], TypeError, r"item 1 is str: 'b'"),
        ([{"text": "a"}, None], TypeError, r"item 1 is NoneType"),
        (
            [{"text": "a"}, {"txt": "b"}],
            MissingInputKeysError,
            r"missing input key\(s\) \['text'\]",
        ),
        ({"text": "a"}, TypeError, r"takes a list of input dicts, got one dict; use chains\.call"),
        ("text", TypeError, r"takes a list of input dicts, got one str"),
        (42, TypeError, r"takes a list \(or any iterable\) of input dicts, got int"),
    ],
)
def test_batch_checks_every_item_before_the_first_call(mode, items, error, message):
    chain = Work()
    for function in ("batch",):
        with pytest.raises(error, match=message) as info:
            mode.drive(function, chain, items)
        if error is MissingInputKeysError:
            assert (
                f"(item 1 of the 2 given to chains.{'a' if mode.is_async else ''}"
                in (info.value.__notes__[0])
            )
    assert chain.done == []


@pytest.mark.timeout(20)
def test_batch_takes_any_iterable(mode):
    chain = Work()
    results = mode.batch(chain, ({"text": str(n)} for n in range(4)))
    assert results == [{"out": str(n)} for n in range(4)]
    assert mode.batch(chain, iter([])) == []
    with pytest.raises(TypeError, match="max_workers must be an int, got str"):
        mode.batch(chain, [{"text": "a"}], max_workers="4")


@pytest.mark.timeout(20)
def test_a_handler_failing_at_chain_end_is_not_followed_by_a_chain_error(mode):
    class Strict(EventRecorder):
        raise_error = True

        def handle_chain_end(self, chain, outputs):
            super().handle_chain_end(chain, outputs)
            raise RuntimeError("end handler failed")

    strict = Strict()
    with pytest.raises(RuntimeError, match="end handler failed"):
        mode.call(Work(), {"text": "x"}, callbacks=strict)
    assert names(strict) == [("start", "Work"), ("end", "Work")]


@pytest.mark.timeout(20)
def test_a_handler_failing_at_chain_start_still_hears_the_chain_end_as_an_error(mode):
    class Strict(EventRecorder):
        raise_error = True

        def handle_chain_start(self, chain, inputs):
            super().handle_chain_start(chain, inputs)
            raise RuntimeError("start handler failed")

    strict, bystander, chain = Strict(), EventRecorder(), Work()
    with pytest.raises(RuntimeError, match="start handler failed"):
        mode.call(chain, {"text": "x"}, callbacks=[strict, bystander])
    assert names(strict) == names(bystander) == [("start", "Work"), ("error", "Work")]
    assert chain.done == []


ABANDONED_CHAIN = """
import asyncio, threading
from chainkit import chains

class Hangs(chains.Chain):
    input_keys = ["x"]
    output_keys = ["y"]

    def _call(self, inputs, **options):
        if inputs["x"] == "boom":
            raise RuntimeError("boom")
        threading.Event().wait()

try:
    asyncio.run(chains.abatch(Hangs(), [{"x": "hang"}, {"x": "boom"}]))
except RuntimeError as error:
    print("raised", error)
"""


@pytest.mark.timeout(30, method="thread")
def test_an_abatch_call_that_never_returns_does_not_hold_up_asyncio_run(tmp_path):
    script = tmp_path / "abandoned_chain.py"
    script.write_text(textwrap.dedent(ABANDONED_CHAIN))
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=20
    )
    assert result.returncode == 0, result.stderr
    assert "raised boom" in result.stdout


NOT_CHAIN_CALLS = {
    "call": lambda thing: chains.call(thing, {"q": "x"}),
    "acall": lambda thing: asyncio.run(chains.acall(thing, {"q": "x"})),
    "run": lambda thing: chains.run(thing, "x"),
    "arun": lambda thing: asyncio.run(chains.arun(thing, "x")),
    "predict": lambda thing: chains.predict(thing, {"q": "x"}),
    "apredict": lambda thing: asyncio.run(chains.apredict(thing, {"q": "x"})),
    "batch": lambda thing: chains.batch(thing, [{"q": "x"}]),
    "abatch": lambda thing: asyncio.run(chains.abatch(thing, [{"q": "x"}])),
    "stream": lambda thing: chains.stream(thing, "x"),  # refused before any next()
    "astream": lambda thing: chains.astream(thing, "x"),
}


@pytest.mark.parametrize("function", sorted(NOT_CHAIN_CALLS))
def test_a_model_given_as_a_chain_is_told_to_pipe_a_prompt_into_it(function):
    model = FakeLLM(["never asked"])
    with pytest.raises(chains.errors.ChainTypeError) as raised:
        NOT_CHAIN_CALLS[function](model)
    assert str(raised.value) == (
        f"chains.{function} runs a chain, got FakeLLM: pipe a prompt into the model: "
        "prompts.PromptTemplate.from_template('{question}') | model | parsers.TextParser(), "
        "or call it with llms.call(model, prompt)"
    )
    assert model.calls == []


@pytest.mark.parametrize("function", sorted(NOT_CHAIN_CALLS))
@pytest.mark.parametrize(
    ("thing", "advice"),
    [
        (PromptTemplate.from_template("{q}"), "pipe the prompt into a model: prompt | model"),
        (tools.Calculator(), "it is a pipeline step: run it as a pipeline, chains.pipe(step)"),
        (chains.pick("q"), "it is a pipeline step: run it as a pipeline, chains.pipe(step)"),
    ],
)
def test_a_pipeline_part_given_as_a_chain_is_told_how_to_run_it(function, thing, advice):
    with pytest.raises(chains.errors.ChainTypeError) as raised:
        NOT_CHAIN_CALLS[function](thing)
    message = str(raised.value)
    assert message.startswith(f"chains.{function} runs a chain, got {type(thing).__name__}: ")
    assert advice in message


@pytest.mark.parametrize("function", sorted(NOT_CHAIN_CALLS))
@pytest.mark.parametrize("thing", ["a prompt", None, object()])
def test_anything_else_given_as_a_chain_is_named(function, thing):
    with pytest.raises(chains.errors.ChainTypeError) as raised:
        NOT_CHAIN_CALLS[function](thing)
    assert str(raised.value) == (
        f"chains.{function} runs a chain, got {type(thing).__name__}: pass a Chain: a "
        "pipeline (prompt | model | parser), a chains.LLMChain, an agents.Executor, or a Chain "
        "subclass of yours"
    )


def test_the_pipeline_a_model_is_told_to_become_runs():
    # The advice names parsers.TextParser; a function taking str ends it the same way here.
    def text(reply: str) -> str:
        return reply

    model = FakeLLM(["an answer"])
    pipeline = PromptTemplate.from_template("{question}") | model | text
    assert chains.run(pipeline, "a question") == "an answer"
    assert chains.run(chains.pipe(tools.Calculator()), "6 * 7") == "42"


# Inputs given by name, as LangChain's chain.predict(question=...) takes them.


def two_inputs() -> tuple[LLMChain, FakeLLM]:
    llm = FakeLLM(["answer"])
    return LLMChain(PromptTemplate.from_template("{question} in {language}"), llm), llm


@pytest.mark.parametrize(
    ("function", "way"),
    [
        ("predict", "chains.predict(chain, {'question': ..., 'language': ...})"),
        ("call", "chains.call(chain, {'question': ..., 'language': ...})"),
        ("stream", "chains.stream(chain, {'question': ..., 'language': ...})"),
        ("run", "chains.run(chain, text) for a chain of one input, or chains.predict(chain, {"),
    ],
)
def test_inputs_given_as_keyword_arguments_name_the_call_to_write(function, way):
    chain, llm = two_inputs()
    with pytest.raises(chains.errors.InputsTypeError) as refused:
        getattr(chains, function)(chain, question="why?", language="French", temperature=0)
    assert str(refused.value).startswith(
        f"chains.{function} takes the chain's inputs as its second argument, not as keyword "
        f"arguments (question, language): write {way}"
    )
    assert llm.calls == []


@pytest.mark.parametrize("function", ["apredict", "acall", "arun"])
def test_async_twins_name_the_call_to_write_too(function):
    chain, llm = two_inputs()
    with pytest.raises(chains.errors.InputsTypeError, match=f"write chains.{function}\\(chain, "):
        asyncio.run(getattr(chains, function)(chain, question="why?"))
    assert llm.calls == []


def test_no_inputs_at_all_and_an_input_beside_the_dict_are_named():
    chain, llm = two_inputs()
    with pytest.raises(
        chains.errors.InputsTypeError, match=r"chains.call needs the chain's inputs as"
    ):
        chains.call(chain)
    with pytest.raises(
        chains.errors.InputsTypeError, match=r"chains.run needs the chain's inputs as"
    ):
        chains.run(chain)
    with pytest.raises(chains.errors.InputsTypeError) as refused:
        chains.predict(chain, {"question": "why?"}, language="French")  # type: ignore[call-arg]
    assert str(refused.value) == (
        "'language' is an input of LLMChain, given as a call option: put it in the inputs dict"
    )
    assert llm.calls == []
    assert chains.predict(chain, {"question": "why?", "language": "French"}) == "answer"


def test_the_inputs_dict_given_to_run_is_named_rather_than_sent_as_its_repr():
    llm = FakeLLM(["answer"])
    chain = LLMChain(PromptTemplate.from_template("Q: {question}"), llm)
    with pytest.raises(chains.errors.InputsTypeError) as refused:
        chains.run(chain, {"question": "why?"})
    assert str(refused.value) == (
        "chains.run takes the input itself, got the inputs dict {'question': 'why?'}: write "
        "chains.run(chain, 'why?'), or chains.predict(chain, inputs)"
    )
    assert llm.calls == []
    assert chains.run(chain, "why?") == "answer"
    assert llm.calls[0].messages == [Message.user("Q: why?")]
