import io
import logging

import pytest

from chainkit import chains
from chainkit.callbacks import Handler, LogHandler
from chainkit.callbacks.combining import CombiningHandler, guard, join
from chainkit.callbacks.errors import HandlerTypeError
from chainkit.callbacks.events import EVENTS
from chainkit.schema import AgentAction, AgentFinish, FunctionCall, Message, ToolCall
from tests.support.event_recorder import EventRecorder
from tests.support.stub_chains import InputOutputChain


class Broken(Handler):
    def handle_text(self, text):
        raise RuntimeError("handler bug")


class StrictBroken(Broken):
    raise_error = True


def test_handler_has_every_event_as_a_noop():
    handler = Handler()
    for event in EVENTS:
        assert callable(getattr(handler, event.method))
    handler.handle_retry(1, RuntimeError("x"), 0.5, "")  # no-op, no error


def test_combining_handler_fans_out_in_order():
    a, b = EventRecorder(), EventRecorder()
    combined = CombiningHandler([a, b])
    combined.handle_text("hello")
    combined.handle_tool_start("calc", "1+1", "call_1")
    assert a.heard() == b.heard() == [("text", "hello"), ("tool_start", "calc", "1+1", "call_1")]


def test_failing_handler_is_logged_and_skipped(caplog):
    after = EventRecorder()
    with caplog.at_level(logging.ERROR, logger="chainkit"):
        CombiningHandler([Broken(), after]).handle_text("go on")
    assert after.heard() == [("text", "go on")]
    assert "handle_text of Broken failed" in caplog.text
    assert "handler bug" in caplog.text


def test_failing_handler_with_raise_error_propagates():
    with pytest.raises(RuntimeError, match="handler bug"):
        CombiningHandler([StrictBroken()]).handle_text("x")


def test_guard_returns_none_without_handlers_flattens_and_dedupes():
    assert guard() is None and guard(None, None) is None
    a, b = EventRecorder(), EventRecorder()
    combined = guard(CombiningHandler([a]), b, a)
    assert isinstance(combined, CombiningHandler) and combined.handlers == [a, b]


def test_log_handler_writes_one_line_per_event():
    out = io.StringIO()
    log = LogHandler(out)
    log.handle_chain_start("Executor", {"input": "告诉我一个随机数"})
    log.handle_llm_start([Message.user("Question: x\nThought:")], {"stop": ["\nObservation:"]})
    log.handle_llm_end(Message.assistant("Action: calc\nAction Input: 1+1"))
    log.handle_agent_action(AgentAction("calc", "1+1", "log"))
    log.handle_tool_start("calc", "1+1", None)
    log.handle_tool_end("calc", "2", "call_7")
    log.handle_tool_error("calc", ValueError("bad"), None)
    log.handle_agent_finish(AgentFinish({"output": "2"}))
    log.handle_retry(2, RuntimeError("503"), 0.25, "")
    lines = out.getvalue().splitlines()
    assert len(lines) == 9
    assert "告诉我一个随机数" in lines[0]
    assert "Question: x\\nThought:" in lines[1]  # what went into the model, on one line
    assert "Action: calc" in lines[2]  # what it chose
    assert "calc (for call_7) output='2'" in lines[5]  # what the tool returned, for which call
    assert "calc input='1+1'" in lines[4]  # an action parsed from text answers no call
    assert "ValueError: bad" in lines[6]
    assert "attempt 2" in lines[8] and "0.25s" in lines[8]


def test_log_handler_shows_tool_calls_and_cuts_long_text():
    out = io.StringIO()
    log = LogHandler(out, max_chars=60)
    call = ToolCall("c1", FunctionCall("get_weather", '{"city":"北京"}'))
    log.handle_llm_end(Message.assistant("", [call]))
    log.handle_text("x" * 200)
    first, second = out.getvalue().splitlines()
    assert "get_weather" in first
    assert second == "[chainkit] text: " + "x" * 30 + "…[140 characters cut]…" + "x" * 30


def test_log_handler_never_prints_api_key(monkeypatch):
    key = "sk-test-abcdefghijklmnopqrstuvwxyz0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    out = io.StringIO()
    log = LogHandler(out)
    log.handle_llm_error(RuntimeError(f"401 for key {key}"))
    log.handle_text("Authorization: Bearer some-other-token-value")
    log.handle_text("leaked sk-proj-ZZZZZZZZZZZZZZZZZZZZ in text")
    text = out.getvalue()
    assert key not in text and key[10:] not in text
    assert "some-other-token-value" not in text
    assert "ZZZZZZZZZZZZZZZZ" not in text
    assert repr(log).startswith("LogHandler(")


def test_log_handler_masks_credential_options():
    out = io.StringIO()
    LogHandler(out).handle_llm_start(
        [Message.user("q")],
        {
            "api_key": "abcdEFGH1234secretvalue",
            "extra_headers": {"api-key": "azurekey999"},
            "seed": 1,
        },
    )
    line = out.getvalue()
    assert "abcdEFGH1234secretvalue" not in line and "azurekey999" not in line
    assert "'seed': 1" in line and "'api_key': '***'" in line


def test_log_handler_shows_token_counts_masks_nested_secrets_and_sums_up_steps():
    from chainkit.schema import AgentStep

    out = io.StringIO()
    log = LogHandler(out, max_chars=80)
    log.handle_llm_start(
        [Message.user("q")], {"max_tokens": 5, "extra_body": {"api_key": "local-secret-123"}}
    )
    key = "sk-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij"
    log.handle_text("x" * 40 + f" {key} " + "y" * 20)  # a cut would keep the key's end only
    step = AgentStep(AgentAction("t", "i", "log"), "o")
    LogHandler(out).handle_chain_end("Executor", {"output": "ok", "intermediate_steps": [step] * 3})
    first, second, third = out.getvalue().splitlines()
    assert "'max_tokens': 5" in first and "local-secret-123" not in first
    assert second == "[chainkit] text: " + "x" * 40 + " sk-A*** " + "y" * 20  # masked, not cut
    assert "'intermediate_steps': [3 steps]" in third


def test_log_handler_masks_inside_lists_and_survives_odd_option_keys():
    out = io.StringIO()
    LogHandler(out).handle_llm_start(
        [Message.user("q")],
        {
            "logit_bias": {50256: -100},
            "extra_body": {"nested": [{"api_key": "abcd1234secretvalue"}]},
            "keywords": "kept",
        },
    )
    line = out.getvalue()
    assert "50256" in line and "'keywords': 'kept'" in line
    assert "abcd1234secretvalue" not in line


def test_raise_error_handler_cannot_replace_an_interrupt(caplog):
    class Strict(Handler):
        raise_error = True

        def handle_chain_error(self, chain, error):
            raise RuntimeError("handler failed")

    CombiningHandler([Strict()]).handle_chain_error("c", KeyboardInterrupt())  # logged only
    assert "handler failed" in caplog.text
    with pytest.raises(RuntimeError, match="handler failed"):
        CombiningHandler([Strict()]).handle_chain_error("c", ValueError())


def test_guard_flattens_nested_combinations():
    a = EventRecorder()
    combined = guard(CombiningHandler([CombiningHandler([a])]), a)
    assert combined is not None and combined.handlers == [a]


def test_join_keeps_every_own_handler():
    a, b = Handler(), Handler()
    joined = join(CombiningHandler([a]), CombiningHandler([a, b]))
    assert joined is not None and joined.handlers == [a, b]


def test_a_handler_method_that_cannot_take_the_events_arguments_is_refused_where_given():
    class BeforeCallIds(Handler):
        def handle_tool_end(self, tool, output):  # type: ignore[override]  # the point
            pass

        def handle_tool_start(self, tool, input, *rest, **named):  # takes anything: kept
            pass

    with pytest.raises(HandlerTypeError) as refused:
        guard(BeforeCallIds())
    assert str(refused.value) == (
        "callbacks: BeforeCallIds.handle_tool_end(self, tool, output) cannot take the "
        "arguments chainkit passes: define handle_tool_end(self, tool, output, tool_call_id)"
    )
    with pytest.raises(HandlerTypeError, match="handle_tool_end"):
        chains.run(Echoes(), "x", callbacks=[LogHandler(), BeforeCallIds()])


def test_a_misspelt_handler_method_is_refused_where_given_naming_the_one_meant():
    class Misspelt(Handler):
        def __init__(self) -> None:
            self.heard: list[str] = []

        def handle_tool_stat(self, tool, input, tool_call_id):
            self.heard.append(tool)

    with pytest.raises(HandlerTypeError) as refused:
        chains.run(Echoes(), "x", callbacks=[LogHandler(), Misspelt()])
    message = str(refused.value)
    assert message.startswith(
        "callbacks: Misspelt defines handle_* methods of no event, which chainkit never "
        "calls: handle_tool_stat (did you mean handle_tool_start(self, tool, input, "
        "tool_call_id)?). The events' methods are handle_agent_action, "
    )
    assert message.endswith("a helper of your own needs a name that does not start with handle_")
    with pytest.raises(HandlerTypeError, match="handle_tool_stat"):
        guard(Misspelt())


def test_a_handler_method_of_no_event_says_langchains_name_and_others_are_listed():
    class Mixed(Handler):
        def handle_llm_new_token(self, token):
            pass

        def handle_zzz(self):
            pass

    with pytest.raises(HandlerTypeError) as refused:
        guard(Mixed())
    message = str(refused.value)
    assert "handle_llm_new_token (did you mean handle_streaming_func(self, chunk)?)" in message
    assert "handle_zzz, " in message or "handle_zzz." in message
    assert "handle_zzz (" not in message
    assert all(event.method in message for event in EVENTS)


class Echoes(InputOutputChain):
    def _call(self, inputs, **options):
        return {"output": inputs["input"]}
