"""Running a batch job's records through a chain: written once, placed by the engines (this
process's event loop, or Ray actors, each running it on records the driver hands out).

A run's result line: `id`; `output` (the chain's one output, or its outputs as an object) or
`error` (`type` and `message`); `steps` (the tool calls the agent made); `usage` (the tokens
of its model calls, summed); `usage_by_model` (per model: `calls`, `input_tokens`,
`output_tokens`, and `unreported`, the replies without usage, when there were any); `seconds`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import Any

from chainkit._batch.records import BadLine, Record, names
from chainkit._errors import FactoryError
from chainkit._redact import redact
from chainkit._threads import in_thread
from chainkit.callbacks import Handler, ModelUsage, UsageTotals
from chainkit.chains import Chain, acall, aresume
from chainkit.checkpoints import RunNotFoundError, named_run
from chainkit.schema import AgentAction, Message, TokenUsage

Result = dict[str, Any]


def chain_of(made: object, spec: str) -> Chain:
    """`made`, checked to be a chain; FactoryError naming what `spec` gave otherwise."""
    if not isinstance(made, Chain):
        raise FactoryError(
            f"{spec} gave {type(made).__name__}, not a chain: it must return an "
            "agents.Executor or another chains.Chain"
        )
    return made


def inputs_needed(chain: Chain) -> list[str]:
    """The input keys each record must give: the chain's, less what its memory fills in."""
    memory = chain.memory
    filled = set(memory.memory_variables) if memory is not None else set()
    return [key for key in chain.input_keys if key not in filled]


class _RunTally(Handler):
    """Counts one run's tool calls and sums the token usage its model calls report."""

    def __init__(self) -> None:
        self.steps = 0
        self._usage = dict.fromkeys((f.name for f in fields(TokenUsage)), 0)
        self._lock = threading.Lock()  # tools in threads may report alongside the loop

    def handle_agent_action(self, action: AgentAction) -> None:
        with self._lock:
            self.steps += 1

    def handle_llm_end(self, message: Message) -> None:
        meta = message.response_meta
        if meta is None or meta.usage is None:
            return
        with self._lock:
            for name in self._usage:
                self._usage[name] += getattr(meta.usage, name)

    def usage(self) -> dict[str, int]:
        return TokenUsage(**self._usage).to_dict()


def checkpoint_id(record: Record, job: str) -> str:
    """The id of a record's run in a checkpoint store: the job's identity, then the record's
    id (or line number), so two jobs sharing a store never take each other's runs."""
    return f"batch:{job}:" + json.dumps(names(record), sort_keys=True)


async def run(chain: Chain, record: Record, *, checkpoint_job: str | None = None) -> Result:
    """The result line of running `chain` on `record`; an exception the run raises is its
    `error`, never raised here (an interrupt or a cancellation is). `checkpoint_job` (for an
    Executor with a checkpointer: the job's identity): a run of the record saved before by
    this job, finished or not, is resumed instead of started anew."""
    tally, by_model = _RunTally(), UsageTotals()
    started = time.perf_counter()
    line: Result = names(record)
    try:
        if checkpoint_job is not None:
            outputs = await _resumed_or_new(chain, record, checkpoint_job, [tally, by_model])
        else:
            outputs = await acall(chain, record.inputs, callbacks=[tally, by_model])
    except Exception as error:
        line["error"] = {"type": type(error).__name__, "message": redact(str(error))}
    else:
        keys = chain.output_keys
        line["output"] = outputs[keys[0]] if len(keys) == 1 else outputs
    line["steps"] = tally.steps
    line["usage"] = tally.usage()
    line["usage_by_model"] = {name: _counts(usage) for name, usage in by_model.models.items()}
    line["seconds"] = round(time.perf_counter() - started, 3)
    return line


async def _resumed_or_new(
    chain: Chain, record: Record, job: str, handlers: list[Handler]
) -> Result:
    store = getattr(chain, "checkpointer", None)
    assert store is not None  # checked when the job started
    run_id = checkpoint_id(record, job)
    try:
        await in_thread(store.load, run_id)  # the database is not waited for on the event loop
    except RunNotFoundError:
        with named_run(run_id):
            return await acall(chain, record.inputs, callbacks=handlers)
    return await aresume(chain, run_id, callbacks=handlers)


def _counts(usage: ModelUsage) -> dict[str, int]:
    counts = {
        "calls": usage.calls,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
    }
    if usage.unreported:
        counts["unreported"] = usage.unreported
    if usage.cache_hits:
        counts["cache_hits"] = usage.cache_hits
        counts["cached_input_tokens"] = usage.cached_input_tokens
        counts["cached_output_tokens"] = usage.cached_output_tokens
    return counts


def add_usage(totals: UsageTotals, result: Result) -> None:
    """Adds a result line's `usage_by_model` to `totals` (a line of an earlier chainkit, or
    of a run that made no model call, adds nothing)."""
    by_model = result.get("usage_by_model")
    if isinstance(by_model, dict):
        for name, counts in by_model.items():
            totals.add(name, ModelUsage(**counts))


def bad_line_result(bad: BadLine) -> Result:
    """The result line of an input line that could not be run."""
    return {
        **names(bad),
        "error": {"type": "InputError", "message": f"line {bad.line}: {bad.problem}"},
        "steps": 0,
        "usage": TokenUsage().to_dict(),
        "usage_by_model": {},
        "seconds": 0.0,
    }


async def run_all(
    chain: Chain,
    records: Iterable[Record],
    concurrency: int,
    finish: Callable[[Result], None],
    *,
    checkpoint_job: str | None = None,
) -> None:
    """Runs `records`, at most `concurrency` at once, handing each result to `finish` as it
    comes. Records are read only as runs free up, so a long input is never held whole. An
    interrupt cancels the runs in flight, and so does an exception `finish` raises (a result
    that cannot be written), which is then raised here: no run starts after it."""
    import asyncio  # loaded already by the running event loop, not at import

    limit = asyncio.Semaphore(concurrency)
    running: set[asyncio.Task[None]] = set()
    failures: list[BaseException] = []
    main = asyncio.current_task()

    async def one(record: Record) -> None:
        try:
            finish(await run(chain, record, checkpoint_job=checkpoint_job))
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # the job ends: no run may take this one's place
            if not failures:
                failures.append(error)
                if main is not None:
                    main.cancel()
            raise
        limit.release()

    def ended(task: asyncio.Task[None]) -> None:
        running.discard(task)
        if not task.cancelled():
            task.exception()  # taken: raised from `failures`, not complained about as lost

    try:
        for record in records:
            await limit.acquire()
            task = asyncio.ensure_future(one(record))
            running.add(task)
            task.add_done_callback(ended)
        while running:
            await asyncio.wait(set(running))
        if failures:
            raise failures[0]
    except BaseException:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        if failures:
            raise failures[0] from None
        raise
