import asyncio
import threading
import time
from typing import Any

import pytest

from chainkit import chains
from chainkit.callbacks import Handler
from chainkit.chains import Chain, LLMChain, SequentialChain, SimpleSequentialChain
from chainkit.chains.errors import (
    ChainWiringError,
    MissingInputKeysError,
    MissingOutputKeysError,
    OutputNotStringError,
    SingleKeyError,
)
from chainkit.llms import CallOptions, FakeLLM
from chainkit.memory import ConversationBuffer
from chainkit.memory.errors import MemoryKeyError
from chainkit.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate
from chainkit.schema import Message
from tests.support.concurrency_peak import Peak
from tests.support.event_recorder import EventRecorder


def seen(events: EventRecorder) -> list[tuple[Any, ...]]:
    """The chain and model events as these tests read them."""
    return events.described(
        {
            "chain_start": lambda chain, inputs: ("chain_start", chain, inputs),
            "chain_end": lambda chain, outputs: ("chain_end", chain, outputs),
            "chain_error": lambda chain, error: ("chain_error", chain, type(error).__name__),
            "llm_start": lambda messages, options: ("llm_start",),
            "llm_end": lambda message: ("llm_end", message.content),
        }
    )


class UpperCase(Chain):
    """Upper-cases `text`; fails on "boom"; sleeps on "slow" to test ordering."""

    def __init__(self, output_key="out", outputs=None):
        self.output_key = output_key
        self.outputs = outputs

    @property
    def input_keys(self):
        return ["text"]

    @property
    def output_keys(self):
        return [self.output_key]

    def _call(self, inputs, **options):
        if inputs["text"] == "boom":
            raise RuntimeError("boom failed")
        if inputs["text"] == "slow":
            time.sleep(0.05)
        if self.outputs is not None:
            return self.outputs
        return {self.output_key: inputs["text"].upper()}


def llm_chain(responses, template="Tell me about {topic}", **kwargs):
    fake = FakeLLM(responses)
    return LLMChain(PromptTemplate.from_template(template), fake, **kwargs), fake


def test_llm_chain_formats_prompt_and_returns_text():
    chain, fake = llm_chain(["Cats purr."])
    assert chains.call(chain, {"topic": "cats"}) == {"text": "Cats purr."}
    assert fake.calls[0].messages == [Message.user("Tell me about cats")]
    assert chain.input_keys == ["topic"] and chain.output_keys == ["text"]


def test_every_call_option_reaches_the_model():
    chain, fake = llm_chain(["a", "b"])
    chunks: list[str] = []
    options = CallOptions(temperature=0.1, max_tokens=7, top_p=0.9, seed=42, model="m-1")
    chains.run(chain, "x", **CallOptions(**options, stop=["\nEND"], streaming_func=chunks.append))
    recorded = fake.calls[0].options
    assert recorded["stop"] == ["\nEND"]
    assert {k: recorded[k] for k in options} == dict(options)
    assert "".join(chunks) == "a"
    chains.run(chain, "y", frequency_penalty=0.5)  # an option chainkit has no name for
    assert fake.calls[1].options["frequency_penalty"] == 0.5


def test_missing_input_key_is_named():
    chain, _ = llm_chain(["x"], template="{a} and {b}")
    with pytest.raises(MissingInputKeysError, match=r"missing input key\(s\) \['b'\]") as info:
        chains.call(chain, {"a": 1})
    assert info.value.keys == ["b"]


def test_missing_output_key_is_named():
    with pytest.raises(MissingOutputKeysError, match=r"\['out'\]; it produced \['other'\]"):
        chains.call(UpperCase(outputs={"other": 1}), {"text": "x"})


def test_run_needs_one_input_and_string_output():
    chain, _ = llm_chain(["x"], template="{a} {b}")
    with pytest.raises(SingleKeyError, match=r"exactly one input key; LLMChain has \['a', 'b'\]"):
        chains.run(chain, "x")
    with pytest.raises(OutputNotStringError, match="returned int under 'out'"):
        chains.run(UpperCase(outputs={"out": 3}), "x")
    assert chains.run(UpperCase(), "abc") == "ABC"
    two_outputs = type("Two", (UpperCase,), {"output_keys": property(lambda self: ["out", "x"])})
    with pytest.raises(SingleKeyError, match=r"exactly one output key; Two has \['out', 'x'\]"):
        chains.predict(two_outputs(outputs={"out": "a", "x": "b"}), {"text": "a"})


def test_predict_with_several_inputs():
    chain, _ = llm_chain(["ok"], template="{a} {b}")
    assert chains.predict(chain, {"a": 1, "b": 2}) == "ok"


def test_output_parser_applied():
    class Words:
        def parse(self, text):
            return text.split()

    chain, _ = llm_chain(["a b c"], output_parser=Words())
    assert chains.call(chain, {"topic": "x"}) == {"text": ["a", "b", "c"]}


def test_chat_prompt_with_memory_messages():
    memory = ConversationBuffer(return_messages=True)
    prompt = ChatPromptTemplate(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("user", "{input}")]
    )
    fake = FakeLLM(["Hello!", "You said hi."])
    chain = LLMChain(prompt, fake, memory=memory)
    assert chains.run(chain, "hi") == "Hello!"
    assert chains.run(chain, "what did I say?") == "You said hi."
    assert fake.calls[1].messages == [
        Message.system("You are terse."),
        Message.user("hi"),
        Message.assistant("Hello!"),
        Message.user("what did I say?"),
    ]


def test_text_memory_is_merged_and_saved():
    memory = ConversationBuffer()
    chain, fake = llm_chain(["A1", "A2"], template="{history}\nHuman: {input}", memory=memory)
    chains.run(chain, "Q1")
    chains.run(chain, "Q2")
    assert fake.calls[1].messages[0].content == "Human: Q1\nAI: A1\nHuman: Q2"
    assert memory.buffer_text().endswith("Human: Q2\nAI: A2")


def test_chain_callbacks_start_end_error(events):
    chain, _ = llm_chain(["fine"], callbacks=events)
    chains.call(chain, {"topic": "t"})
    assert seen(events) == [
        ("chain_start", "LLMChain", {"topic": "t"}),
        ("llm_start",),
        ("llm_end", "fine"),
        ("chain_end", "LLMChain", {"text": "fine"}),
    ]
    failing = UpperCase()
    failing.callbacks = events
    with pytest.raises(RuntimeError, match="boom failed"):
        chains.call(failing, {"text": "boom"})
    assert seen(events)[-1] == ("chain_error", "UpperCase", "RuntimeError")


def test_broken_callback_does_not_break_the_chain():
    class Broken(Handler):
        def handle_chain_start(self, chain, inputs):
            raise ValueError("bug in handler")

    chain, _ = llm_chain(["still fine"], callbacks=Broken())
    assert chains.run(chain, "x") == "still fine"


def test_batch_keeps_order_and_runs_concurrently():
    seen_threads = set()

    class Tracking(UpperCase):
        def _call(self, inputs, **options):
            seen_threads.add(threading.get_ident())
            return super()._call(inputs, **options)

    inputs = [{"text": t} for t in ["slow", "b", "slow", "d"]]
    assert chains.batch(Tracking(), inputs, max_workers=4) == [
        {"out": "SLOW"},
        {"out": "B"},
        {"out": "SLOW"},
        {"out": "D"},
    ]
    assert len(seen_threads) > 1


def test_batch_raises_first_error_in_input_order():
    bad2_failed = threading.Event()

    class Fails(UpperCase):
        def _call(self, inputs, **options):
            if inputs["text"] == "bad1":
                bad2_failed.wait(timeout=5)  # fail only after the later input has failed
            if inputs["text"].startswith("bad"):
                if inputs["text"] == "bad2":
                    bad2_failed.set()
                raise RuntimeError(inputs["text"])
            return super()._call(inputs, **options)

    with pytest.raises(RuntimeError, match="bad1"):
        chains.batch(Fails(), [{"text": "ok"}, {"text": "bad1"}, {"text": "bad2"}])
    assert bad2_failed.is_set()
    results = chains.batch(Fails(), [{"text": "ok"}, {"text": "bad2"}], return_exceptions=True)
    assert results[0] == {"out": "OK"} and str(results[1]) == "bad2"


def test_async_twins():
    chain, fake = llm_chain(["r1", "r2", "r3", "r4", "r5"])
    assert asyncio.run(chains.arun(chain, "a", seed=3)) == "r1"
    assert fake.calls[0].options["seed"] == 3
    assert asyncio.run(chains.acall(chain, {"topic": "b"})) == {"text": "r2"}
    assert asyncio.run(chains.apredict(chain, {"topic": "c"})) == "r3"
    out = asyncio.run(chains.abatch(chain, [{"topic": "d"}, {"topic": "e"}], max_workers=1))
    assert out == [{"text": "r4"}, {"text": "r5"}]
    with pytest.raises(RuntimeError, match="boom failed"):
        asyncio.run(chains.abatch(UpperCase(), [{"text": "x"}, {"text": "boom"}]))
    results = asyncio.run(chains.abatch(UpperCase(), [{"text": "boom"}], return_exceptions=True))
    assert isinstance(results[0], RuntimeError)


def test_default_acall_runs_sync_call():
    assert asyncio.run(chains.arun(UpperCase(), "abc")) == "ABC"


def test_sequential_chain_flows_keys():
    first, _ = llm_chain(["synopsis!"], template="Write about {title}", output_key="synopsis")
    second, fake2 = llm_chain(["review!"], template="Review: {synopsis}", output_key="review")
    seq = SequentialChain(
        [first, second], input_variables=["title"], output_variables=["synopsis", "review"]
    )
    assert chains.call(seq, {"title": "Dune"}) == {"synopsis": "synopsis!", "review": "review!"}
    assert fake2.calls[0].messages[0].content == "Review: synopsis!"


def test_sequential_chain_checks_wiring_at_construction():
    first, _ = llm_chain([], template="{title}", output_key="synopsis")
    needs_missing, _ = llm_chain([], template="{synopsis} {era}", output_key="review")
    with pytest.raises(ChainWiringError, match=r"chain 1 \(LLMChain\) needs \['era'\]"):
        SequentialChain([first, needs_missing], input_variables=["title"])
    overwrites, _ = llm_chain([], template="{synopsis}", output_key="title")
    with pytest.raises(ChainWiringError, match=r"overwrite existing key\(s\) \['title'\]"):
        SequentialChain([first, overwrites], input_variables=["title"])
    with pytest.raises(ChainWiringError, match=r"output variables \['nope'\]"):
        SequentialChain([first], input_variables=["title"], output_variables=["nope"])
    with pytest.raises(ChainWiringError, match="at least one chain"):
        SequentialChain([], input_variables=[])


def test_simple_sequential_chain_and_async():
    a, _ = llm_chain(["step one"], template="{x}")
    b, fake_b = llm_chain(["step two"], template="then {y}")
    simple = SimpleSequentialChain([a, b])
    assert chains.run(simple, "go") == "step two"
    assert fake_b.calls[0].messages[0].content == "then step one"
    with pytest.raises(ChainWiringError, match="one input and one output key"):
        SimpleSequentialChain([llm_chain([], template="{p}{q}")[0]])
    c, _ = llm_chain(["s1"], template="{x}", output_key="s")
    d, _ = llm_chain(["s2"], template="{s}", output_key="t")
    seq = SequentialChain([c, d], input_variables=["x"])
    assert asyncio.run(chains.acall(seq, {"x": "1"})) == {"t": "s2"}


def test_abatch_cancels_the_rest_after_a_failure():
    started: list[str] = []

    class Slow(UpperCase):
        async def _acall(self, inputs, **options):
            started.append(inputs["text"])
            if inputs["text"] == "boom":
                raise RuntimeError("boom failed")
            await asyncio.sleep(10)  # cancelled long before
            return {"out": "late"}

    items = [{"text": "boom"}] + [{"text": str(i)} for i in range(20)]
    with pytest.raises(RuntimeError, match="boom failed"):
        asyncio.run(chains.abatch(Slow(), items, max_workers=2))
    assert len(started) <= 3


def test_per_call_callbacks_hear_chain_and_llm_events(events):
    chain, _ = llm_chain(["fine"])
    chains.call(chain, {"topic": "t"}, callbacks=events)
    assert [e[0] for e in seen(events)] == ["chain_start", "llm_start", "llm_end", "chain_end"]


def test_memory_is_saved_before_chain_end_and_key_errors_come_first(events):
    fake = FakeLLM(["r"])
    chain = LLMChain(
        PromptTemplate.from_template("{history} {a} {b}"),
        fake,
        memory=ConversationBuffer(),
        callbacks=events,
    )
    with pytest.raises(MemoryKeyError, match="cannot tell which input key"):
        chains.call(chain, {"a": 1, "b": 2})
    assert fake.calls == []  # failed before the model was called


def test_sequence_handler_hears_the_inner_chains(events):
    first, _ = llm_chain(["s1"], template="{x}", output_key="s")
    second, _ = llm_chain(["s2"], template="{s}", output_key="t")
    seq = SequentialChain([first, second], input_variables=["x"], callbacks=events)
    chains.call(seq, {"x": "1"})
    assert [e[:2] for e in seen(events) if e[0].startswith("chain")] == [
        ("chain_start", "SequentialChain"),
        ("chain_start", "LLMChain"),
        ("chain_end", "LLMChain"),
        ("chain_start", "LLMChain"),
        ("chain_end", "LLMChain"),
        ("chain_end", "SequentialChain"),
    ]
    assert seen(events).count(("llm_start",)) == 2
    assert repr(seq) == (
        "SequentialChain(['LLMChain', 'LLMChain'], input_variables=['x'], output_variables=['t'])"
    )


def test_async_batch_of_nothing_is_nothing():
    assert asyncio.run(chains.abatch(UpperCase(), [])) == []
    assert chains.batch(UpperCase(), []) == []


def test_abatch_raises_a_cancellation_it_did_not_cause():
    class Cancels(UpperCase):
        async def _acall(self, inputs, **options):
            if inputs["text"] == "x":
                raise asyncio.CancelledError
            return {"out": inputs["text"]}

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(chains.abatch(Cancels(), [{"text": "a"}, {"text": "x"}, {"text": "b"}]))


class KeyedChain(Chain):
    """A test chain whose keys are class attributes."""

    keys_in: tuple[str, ...] = ()
    keys_out: tuple[str, ...] = ()

    @property
    def input_keys(self):
        return list(self.keys_in)

    @property
    def output_keys(self):
        return list(self.keys_out)


class Interrupting(KeyedChain):
    keys_in = ("x",)
    keys_out = ("y",)

    def _call(self, inputs, **options):
        raise KeyboardInterrupt

    async def _acall(self, inputs, **options):
        raise KeyboardInterrupt


def test_memory_never_overwrites_an_input_the_caller_gave():
    memory = ConversationBuffer()
    memory.save_context({"input": "old"}, {"text": "older"})
    fake = FakeLLM(["r"])
    chain = LLMChain(PromptTemplate.from_template("{history}|{input}"), fake, memory=memory)
    chains.call(chain, {"input": "q", "history": "given by caller"})
    assert fake.calls[0].messages[0].content == "given by caller|q"


def test_an_interrupted_chain_still_reports_its_error(mode, events):
    chain = Interrupting()
    chain.callbacks = events
    with pytest.raises(KeyboardInterrupt):
        mode.call(chain, {"x": 1})
    errors = [
        (name, chain, type(error).__name__) for name, chain, error in events.heard("chain_error")
    ]
    assert errors == [("chain_error", "Interrupting", "KeyboardInterrupt")]


def test_batch_runs_nothing_queued_after_a_failure_and_caps_workers():
    ran: list[int] = []
    peak = Peak()

    class Counting(KeyedChain):
        keys_in = ("n",)
        keys_out = ("n",)

        def _call(self, inputs, **options):
            peak.enter()
            try:
                ran.append(inputs["n"])
                if inputs["n"] == 0:
                    raise RuntimeError("first fails")
                return dict(inputs)
            finally:
                peak.leave()

    with pytest.raises(RuntimeError, match="first fails"):
        chains.batch(Counting(), [{"n": i} for i in range(6)], max_workers=1)
    assert ran == [0]
    ran.clear()
    chains.batch(Counting(), [{"n": i} for i in range(1, 9)], max_workers=2)
    assert sorted(ran) == list(range(1, 9)) and peak.peak <= 2
    with pytest.raises(ValueError, match="max_workers must be at least 1"):
        chains.batch(Counting(), [{"n": 1}], max_workers=0)


def test_abatch_raises_the_real_error_not_a_cancellation():
    class Mixed(KeyedChain):
        keys_in = ("n",)
        keys_out = ("n",)

        def _call(self, inputs, **options):
            raise NotImplementedError

        async def _acall(self, inputs, **options):
            if inputs["n"] == 0:
                await asyncio.sleep(5)  # still running when item 1 fails
            raise RuntimeError(f"item {inputs['n']} failed")

    with pytest.raises(RuntimeError, match="item 1 failed"):
        asyncio.run(chains.abatch(Mixed(), [{"n": 0}, {"n": 1}]))


def test_arun_names_run_in_its_error():
    two = SequentialChain(
        [LLMChain(PromptTemplate.from_template("{a}"), FakeLLM([]), output_key="o")],
        input_variables=["a", "b"],
    )
    with pytest.raises(SingleKeyError, match=r"^run\(\)"):
        asyncio.run(chains.arun(two, "x"))
