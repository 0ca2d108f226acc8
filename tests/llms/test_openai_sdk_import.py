"""The one-time import of the openai package happens before the first model run starts, so
that no run's duration (in a trace, a span, a log) includes it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

FIRST_CALL = textwrap.dedent(
    """
    import asyncio, sys
    from chainkit import callbacks, llms
    from chainkit.schema import Message

    class Started(callbacks.Handler):
        def handle_llm_start(self, messages, options):
            print("openai" in sys.modules)

    model = llms.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", max_attempts=1)
    call = model.generate if sys.argv[1] == "sync" else (
        lambda *a, **k: asyncio.run(model.agenerate(*a, **k)))
    try:
        call([Message("user", "hi")], callbacks=Started())
    except llms.ModelError:  # nothing listens on port 9: only the run's start matters
        pass
    """
)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("driver", ["sync", "async"])
def test_the_openai_package_is_loaded_before_the_first_run_starts(driver):
    done = subprocess.run(
        [sys.executable, "-c", FIRST_CALL, driver], capture_output=True, text=True, timeout=50
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]
