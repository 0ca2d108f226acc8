"""ContextThreadPoolExecutor: work submitted to it runs inside the run that submitted it."""

from __future__ import annotations

import pytest

from chainkit import callbacks, chains
from chainkit.callbacks import current_run
from chainkit.callbacks.combining import guard
from chainkit.callbacks.run import enter, streaming_tokens, tokens_wanted
from tests.support.event_recorder import EventRecorder
from tests.support.stub_chains import InputOutputChain


class Upper(InputOutputChain):
    def _call(self, inputs, **options):
        return {"output": inputs["input"].upper()}


@pytest.mark.timeout(60)
def test_submitted_and_mapped_calls_are_children_of_the_submitting_run(events: EventRecorder):
    with (
        enter("tool", "fans out", guard(events)) as tool,
        streaming_tokens(),
        callbacks.ContextThreadPoolExecutor(max_workers=2) as pool,
    ):
        seen = pool.submit(lambda: (current_run(), tokens_wanted())).result(timeout=30)
        answers = list(pool.map(lambda text: chains.run(Upper(), text), ["a", "b"]))
    assert seen == (tool, True)
    assert answers == ["A", "B"]
    starts = [run for name, run in events.runs("chain_start")]
    assert len(starts) == 2 and all(run is not None and run.parent == tool for run in starts)
