"""The test files .ci/run runs without the extras: those whose outcome an extra can change."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def chosen_without(*extras: str) -> list[str]:
    script = ROOT / ".ci" / "extras_tests.py"
    listed = subprocess.run(
        [sys.executable, str(script), *extras], capture_output=True, text=True, check=True
    )
    return listed.stdout.split()


def test_ci_runs_without_the_extras_every_test_file_an_extra_can_change() -> None:
    # .ci/run runs these where the extras are missing: each extra's own tests, those reaching
    # them through a helper, and those that import every module of chainkit.
    every = chosen_without()
    for reaches_an_extra in (
        "tests/test_ray.py",
        "tests/tools/test_mcp.py",
        "tests/tools/test_toolset.py",  # through tests/tools/test_mcp.py's helpers
        "tests/callbacks/test_otel.py",
        "tests/llms/test_fallbacks.py",  # through tests/support/otel.py
        "tests/checkpoints/test_stores.py",
        "tests/test_errors.py",  # imports every module
        "tests/test_layering.py",
        "tests/documents/test_loaders.py",  # trafilatura and pypdf
        "tests/documents/test_directory.py",  # a PDF among the files
    ):
        assert reaches_an_extra in every
    assert "tests/prompts/test_prompts.py" not in every
    ray = chosen_without("ray")
    assert "tests/test_ray.py" in ray and "tests/test_layering.py" in ray
    assert "tests/tools/test_mcp.py" not in ray
    assert set(ray) <= set(every)
    serve = chosen_without("serve")
    assert "tests/serving/test_stream.py" in serve and "tests/test_docs.py" in serve
    assert "tests/agents/test_executor.py" not in serve
    assert set(serve) <= set(every)
