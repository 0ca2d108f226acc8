"""Trace files written event by event, as TraceFile writes them: for pages and trees built from
traces that a test shapes exactly (many runs, an hour between roots, retries, odd text)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TraceWriter:
    """Collects events; `write(path)` puts them in a trace file, one JSON line each."""

    events: list[dict[str, Any]] = field(default_factory=list)
    count: int = 0

    def event(
        self, kind: str, run: tuple[str, str | None, str, str], at: float, **data: Any
    ) -> None:
        run_id, parent_id, run_kind, name = run
        self.events.append(
            {
                "kind": kind,
                "run_id": run_id,
                "parent_id": parent_id,
                "run_kind": run_kind,
                "name": name,
                "time": at,
                "data": data,
            }
        )

    def new_run(self, parent: str | None, kind: str, name: str) -> tuple[str, str | None, str, str]:
        self.count += 1
        return (f"run-{self.count:06d}", parent, kind, name)

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(event) + "\n" for event in self.events))
        return path


def tool_calling_agent(
    trace: TraceWriter, question: str, steps: int, at: float, retry_at: int | None = None
) -> str:
    """A ToolCallingAgent's run: `steps` model calls, each (but the last) calling the tool
    `lookup` once, every prompt the one before plus the call and its result; the model call
    number `retry_at` is retried once, its first attempt's text discarded. Its root's id."""
    root = trace.new_run(None, "chain", "Executor")
    trace.event("chain_start", root, at, inputs={"input": question})
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You answer with the tools you have."},
        {"role": "user", "content": question},
    ]
    for step in range(steps):
        model = trace.new_run(root[0], "llm", "gpt-4o-mini")
        options = {"temperature": 0, "max_tokens": 256}
        at += 0.01
        trace.event("llm_start", model, at, messages=list(messages), options=options,
                    model="gpt-4o-mini", provider="openai")  # fmt: skip
        if step == retry_at:
            trace.event("retry", model, at + 0.2, attempt=1, wait=0.5,
                        error={"type": "APIConnectionError", "message": "connection reset"},
                        discarded="The answer is 85,")  # fmt: skip
        trace.event("token", model, at + 0.25, text="x")
        at += 0.4
        reply = _reply(step, steps, question)
        usage = {"prompt_tokens": 100 + 40 * step, "completion_tokens": 20, "total_tokens": 0}
        trace.event("llm_end", model, at, message={**reply, "response_meta": {"usage": usage}})
        messages.append(reply)
        if step < steps - 1:
            tool = trace.new_run(root[0], "tool", "lookup")
            trace.event("tool_start", tool, at, input=f'{{"key": "k{step}"}}')
            at += 0.05
            trace.event("tool_end", tool, at, output=f"value {step}")
            result = {"role": "tool", "content": f"value {step}", "tool_call_id": f"c{step}"}
            messages.append(result)
    trace.event("chain_end", root, at + 0.01, outputs={"output": "done"})
    return root[0]


def _reply(step: int, steps: int, question: str) -> dict[str, Any]:
    if step == steps - 1:
        return {"role": "assistant", "content": f"Done with {question}"}
    call = {"name": "lookup", "arguments": json.dumps({"key": f"k{step}"})}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"c{step}", "type": "function", "function": call}],
    }
