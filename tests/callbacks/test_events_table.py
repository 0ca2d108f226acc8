"""The table of callback events is the one list of them: every handler method has its row,
and what is made from the table, or written beside it, agrees with it."""

from __future__ import annotations

import inspect
import re
from typing import Any, get_args

import pytest

from chainkit.callbacks import EventHandler, Handler, trace_view
from chainkit.callbacks import handler as handler_module
from chainkit.callbacks.combining import CombiningHandler, guard
from chainkit.callbacks.events import (
    END_KINDS,
    ERROR_KINDS,
    EVENTS,
    START_KINDS,
    CallbackEvent,
    Event,
    EventKind,
    ending,
)
from chainkit.callbacks.run import RunKind, enter
from tests.support.event_recorder import EventRecorder

BY_METHOD = {event.method: event for event in EVENTS}


def handler_methods() -> list[str]:
    return [name for name in vars(Handler) if name.startswith("handle_")]


def parameters(method: Any) -> tuple[str, ...]:
    return tuple(inspect.signature(method).parameters)[1:]  # without self


def sentinels(event: CallbackEvent) -> dict[str, object]:
    """A distinct object for each argument of `event`, named after it; options are a dict,
    which the event adapter reads the model from."""
    return {name: {} if name == "options" else Named(name) for name in event.arguments}


class Named:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


class Spy(Handler):
    """Records every handler call as `(method, arguments)`, the arguments as given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []

    def __getattribute__(self, name: str) -> Any:
        if not name.startswith("handle_"):
            return object.__getattribute__(self, name)
        calls = object.__getattribute__(self, "calls")
        return lambda *arguments: calls.append((name, arguments))


def test_every_handler_method_has_exactly_one_row_and_every_row_a_method():
    methods = [event.method for event in EVENTS]
    assert len(methods) == len(set(methods)), "a method has two rows"
    assert sorted(methods) == sorted(handler_methods())


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.method)
def test_a_rows_arguments_are_its_handler_methods(event: CallbackEvent):
    assert event.arguments == parameters(getattr(Handler, event.method))
    assert event.run_name is None or event.run_name == event.arguments[0]
    assert set(event.data.values()) <= set(event.arguments)
    assert (event.kind is None) == (not event.data)
    if event.phase != "other":
        assert event.run_kind is not None and event.kind is not None


def test_each_kind_of_run_has_one_start_one_end_and_one_error():
    for run_kind in get_args(RunKind):
        phases = sorted(e.phase for e in EVENTS if e.run_kind == run_kind and e.phase != "other")
        assert phases == ["end", "error", "start"], run_kind
        names = {e.run_name for e in EVENTS if e.run_kind == run_kind and e.phase != "other"}
        assert len(names) == 1, f"the {run_kind} events name their run differently: {names}"


def test_the_event_kinds_are_those_of_the_table_each_once():
    kinds = [event.kind for event in EVENTS if event.kind is not None]
    assert len(kinds) == len(set(kinds))
    assert sorted(kinds) == sorted(get_args(EventKind))
    phases = {event.kind: event.phase for event in EVENTS}
    assert {kind for kind in kinds if phases[kind] == "start"} == START_KINDS
    assert {kind for kind in kinds if phases[kind] == "end"} == END_KINDS
    assert {kind for kind in kinds if phases[kind] == "error"} == ERROR_KINDS


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.method)
def test_the_combining_handler_forwards_each_event_with_its_arguments(event: CallbackEvent):
    own = vars(CombiningHandler).get(event.method)
    arguments = ", ".join(event.arguments)
    assert own is not None and parameters(own) == event.arguments, (
        f"CombiningHandler needs {event.method}, with Handler's signature, doing "
        f'self._dispatch("{event.method}", {arguments})'
    )
    first, second = Spy(), Spy()
    given = sentinels(event)
    getattr(CombiningHandler([first, second]), event.method)(**given)
    assert first.calls == second.calls == [(event.method, tuple(given.values()))]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.method)
def test_the_event_adapter_makes_the_rows_record(event: CallbackEvent):
    heard: list[Event] = []

    class Listening(EventHandler):
        def on_event(self, event: Event) -> None:
            heard.append(event)

    given = sentinels(event)
    with enter(event.run_kind or "chain", "a run", guard(Listening())) as run:
        getattr(run.handler, event.method)(*given.values())
    if event.kind is None:
        assert heard == []
        return
    [record] = heard
    assert record.kind == event.kind
    assert record.run_kind == (event.run_kind or "chain")
    expected = {key: given[argument] for key, argument in event.data.items()}
    assert {key: record.data[key] for key in expected} == expected
    extra = set(record.data) - set(expected)
    assert extra == ({"model", "provider"} if event.kind == "llm_start" else set())


@pytest.mark.parametrize("run_kind", get_args(RunKind))
def test_a_run_ends_and_fails_with_the_events_of_its_kind(run_kind: RunKind):
    spy = Spy()
    error = RuntimeError("failed")
    with enter(run_kind, "ends", guard(spy)) as run:
        run.end("the result")
    with enter(run_kind, "fails", guard(spy)) as run:
        run.fail(error)
    end, failure = ending(run_kind, "end"), ending(run_kind, "error")
    assert spy.calls == [
        (end.method, end.reported("ends", "the result")),
        (failure.method, failure.reported("fails", error)),
    ]


def test_the_recorder_hears_every_event_under_its_methods_name():
    recorder = EventRecorder()
    for event in EVENTS:
        # An empty dict is what each argument the recorder copies may be: a list or a dict.
        getattr(recorder, event.method)(*({} for _ in event.arguments))
    assert [name for name, *_ in recorder.heard()] == [
        event.method.removeprefix("handle_") for event in EVENTS
    ]


def test_what_is_written_beside_the_table_names_its_events():
    assert set(handler_module._LANGCHAIN_METHODS.values()) <= set(BY_METHOD)
    kinds = {event.kind: event for event in EVENTS}
    for kind, key in trace_view._INPUT.items():
        assert kinds[kind].phase == "start" and key in kinds[kind].data  # type: ignore[index]
    for kind, key in trace_view._OUTPUT.items():
        assert kinds[kind].phase == "end" and key in kinds[kind].data  # type: ignore[index]
    assert set(trace_view._INPUT) == START_KINDS and set(trace_view._OUTPUT) == END_KINDS


def test_the_event_records_documented_data_is_the_tables():
    documented: dict[str, set[str]] = {}
    for kinds, keys in re.findall(r"((?:[\w*]+ )+)`\{([^}]*)\}`", Event.__doc__ or ""):
        for kind in kinds.split():
            documented[kind] = set(re.findall(r'"(\w+)"', keys))
    for event in EVENTS:
        if event.kind is None:
            continue
        expected = set(event.data) | ({"model", "provider"} if event.kind == "llm_start" else set())
        own = event.kind in documented or event.phase != "error"
        key = event.kind if own else "every"
        assert documented.get(key) == expected, f"Event's docstring on {event.kind}"
