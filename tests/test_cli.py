import os
import subprocess
import sys

import pytest


def run_cli(*args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "chainkit", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_run_random_number_offline():
    result = run_cli("run", "告诉我一个随机数")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().isdigit()
    assert "offline model" in result.stderr


def test_run_calculator_and_time():
    assert run_cli("run", "what is 12*(3+4)?").stdout == "84\n"
    result = run_cli("run", "现在几点了?")
    assert result.returncode == 0 and ":" in result.stdout


def test_verbose_streams_the_trace():
    result = run_cli("run", "-v", "what is 2+2?")
    assert result.stdout == "4\n"
    assert "[chainkit] agent action: tool='calculator' input='2+2'" in result.stderr
    assert "[chainkit] tool end: calculator output='4'" in result.stderr


def test_max_iterations_option_and_error_exit():
    result = run_cli("run", "--max-iterations", "0", "2+2")
    assert result.returncode == 1
    assert "max_iterations must be at least 1" in result.stderr


def test_usage_errors():
    result = run_cli()
    assert result.returncode == 2 and "usage: chainkit" in result.stderr
    help_text = run_cli("run", "--help").stdout
    for option in ["-v", "--max-iterations", "--model", "--base-url"]:
        assert option in help_text


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "OPENAI_BASE_URL"])
def test_openai_env_selects_the_openai_backend(variable):
    # Nothing listens on port 9 of loopback: the run must fail trying the OpenAI backend,
    # proving the offline model was not used, and the key must not leak.
    env = {
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        variable: "sk-secret-test-key-0123456789abcdef"
        if variable == "OPENAI_API_KEY"
        else "http://127.0.0.1:9/v1",
    }
    result = run_cli("run", "--max-iterations", "1", "hi", env_extra=env)
    assert result.returncode == 1
    assert "offline model" not in result.stderr
    assert "sk-secret-test-key-0123456789abcdef" not in result.stderr + result.stdout
