"""Events are plain data: `Event.to_dict()` is JSON for every kind of event, whatever its
payload, and a trace file line is that very JSON."""

from __future__ import annotations

import datetime
import enum
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from chainkit import callbacks
from chainkit.callbacks import Event, EventHandler
from chainkit.callbacks.combining import guard
from chainkit.callbacks.events import EVENTS, CallbackEvent
from chainkit.callbacks.run import enter
from chainkit.schema import AgentAction, FunctionCall, Message, ToolCall

KEY = "sk-abcdefghijklmnopqrstuvwxyz123456"
WHEN = datetime.datetime(2026, 12, 2, 10, 30, tzinfo=datetime.UTC)


class Colour(enum.Enum):
    RED = "red"


@dataclass
class Report:
    """A user's dataclass, holding what JSON has no type for."""

    raw: bytes
    tags: set[str]
    when: datetime.datetime
    problem: Exception
    reply: Message
    colour: Colour
    nested: list[Any] = field(default_factory=list)
    api_key: str = "hunter2-hunter2"


def payload() -> dict[Any, Any]:
    """One value of every kind an event may carry that json.dumps refuses as it is."""
    cycle: list[Any] = []
    cycle.append(cycle)
    reply = Message.assistant("", tool_calls=[ToolCall("call_1", FunctionCall("calc", "{}"))])
    return {
        "report": Report(b"\x00\xff", {"b", "a"}, WHEN, ValueError("bad"), reply, Colour.RED),
        "action": AgentAction("calc", "1+1", "log", tool_call_id="call_1"),
        "frozen": frozenset({3, 1, 2}),
        "day": WHEN.date(),
        "path": PurePosixPath("/tmp/run.jsonl"),
        "nan": float("nan"),
        "cycle": cycle,
        "error": KeyError("missing"),
        "said": f"the key is {KEY}",
        ("a", "tuple"): "as a key",
        7: "an int key",
    }


class Collects(EventHandler):
    def __init__(self) -> None:
        self.events: list[Event] = []

    def on_event(self, event: Event) -> None:
        self.events.append(event)


def heard_as(event: CallbackEvent, handler: EventHandler) -> None:
    """Reports `event` to `handler` in a run of its kind, every argument the odd payload
    (a Mapping, as options must be; a list for messages and documents)."""
    arguments = [
        [payload()] if name in ("messages", "documents") else payload() for name in event.arguments
    ]
    with enter(event.run_kind or "chain", "a run", guard(handler)) as run:
        assert run.handler is not None
        getattr(run.handler, event.method)(*arguments)


RECORDED = [event for event in EVENTS if event.kind is not None]


@pytest.mark.parametrize("event", RECORDED, ids=lambda e: e.kind)
def test_every_kind_of_event_is_plain_json_and_its_trace_line(event: CallbackEvent, tmp_path):
    collected = Collects()
    path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(path) as trace:
        heard_as(event, collected)
        heard_as(event, trace)
    [record] = collected.events
    plain = record.to_dict()
    text = json.dumps(plain, allow_nan=False)  # no default=, no NaN: plain JSON
    assert json.loads(text) == plain
    [line] = path.read_text(encoding="utf-8").splitlines()
    written = json.loads(line)
    assert written.pop("run_id") and written.pop("time")  # another run, a moment later
    assert written == {k: v for k, v in plain.items() if k not in ("run_id", "time")}
    assert KEY not in text and KEY not in line


def test_each_value_is_written_as_what_it_stands_for():
    collected = Collects()
    with enter("chain", "a run", guard(collected)) as run:
        assert run.handler is not None
        run.handler.handle_chain_start("a run", payload())
    data = collected.events[0].to_dict()["data"]["inputs"]
    report = data["report"]
    assert report["raw"] == repr(b"\x00\xff")
    assert report["tags"] == ["a", "b"] and data["frozen"] == [1, 2, 3]
    assert report["when"] == "2026-12-02T10:30:00+00:00" and data["day"] == "2026-12-02"
    assert report["problem"] == {"type": "ValueError", "message": "bad"}
    assert report["reply"]["tool_calls"][0]["id"] == "call_1"  # a message in its wire shape
    assert report["colour"] == "red" and report["nested"] == []
    assert report["api_key"] == "***"  # a dataclass's fields are masked as a dict's
    assert data["action"] == {
        "tool": "calc",
        "tool_input": "1+1",
        "log": "log",
        "tool_call_id": "call_1",
        "message_log": [],
    }
    assert data["path"] == "/tmp/run.jsonl" and data["nan"] == "nan"
    assert data["cycle"] == ["<cycle>"]
    assert data["error"] == {"type": "KeyError", "message": "'missing'"}
    assert data["said"] == "the key is sk-a***"
    assert data["('a', 'tuple')"] == "as a key" and data["7"] == "an int key"


def test_a_value_that_cannot_be_converted_is_written_as_its_repr():
    class Broken:
        def to_dict(self) -> dict[str, Any]:
            raise RuntimeError("no")

        def __repr__(self) -> str:
            return "<Broken>"

    collected = Collects()
    with enter("chain", "a run", guard(collected)) as run:
        assert run.handler is not None
        run.handler.handle_chain_end("a run", {"ok": 1, "broken": Broken()})
    assert collected.events[0].to_dict()["data"] == {"outputs": {"ok": 1, "broken": "<Broken>"}}


def test_the_shape_of_a_token_events_data_is_documented_where_events_are():
    # The user docs (the README, and the docs site's pages) and Event's docstring say what a
    # token event holds: its data["text"], in the model's run.
    root = Path(__file__).resolve().parents[2]
    docs = "\n".join(
        path.read_text(encoding="utf-8")
        for path in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    )
    assert '`data["text"]` is the piece' in " ".join(docs.split())
    assert 'token `{"text"}`: `text` is one streamed piece of the reply' in " ".join(
        (Event.__doc__ or "").split()
    )
