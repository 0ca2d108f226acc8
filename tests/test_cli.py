import argparse
import importlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import chainkit._cli.run
from chainkit._cli.entry_point import main, parser
from chainkit._cli.run import _model
from chainkit.agents import Executor
from chainkit.llms import FakeLLM, Model, OfflineModel, OpenAI
from tests.support.gbnf import matches
from tests.support.openai_server import Fault, Reply


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
    # Each line names its run; a run inside another (the tool, in the executor) is indented.
    assert "[chainkit] 000001 agent action: tool='calculator' input='2+2'" in result.stderr
    assert "[chainkit] 000003   tool end: calculator output='4'" in result.stderr


def test_max_iterations_is_honoured():
    # The offline model needs two model calls (act, then answer): one is not enough.
    result = run_cli("run", "--max-iterations", "1", "2+2")
    assert result.returncode == 1
    assert "NotFinishedError" in result.stderr and "max_iterations=1" in result.stderr
    assert run_cli("run", "--max-iterations", "2", "2+2").stdout == "4\n"


def test_bad_arguments_are_named():
    result = run_cli("run", "--max-iterations", "0", "2+2")
    assert result.returncode == 2 and "--max-iterations: must be at least 1" in result.stderr
    result = run_cli("run", "   ")
    assert result.returncode == 2 and "the question is empty" in result.stderr
    result = run_cli("run", "--model", "gpt-4o", "2+2")
    assert result.returncode == 2
    assert "--model gpt-4o needs an OpenAI-compatible endpoint" in result.stderr


def test_the_console_script_is_the_command_python_m_chainkit_runs():
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    scripts = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["scripts"]
    module, _, name = scripts["chainkit"].partition(":")
    assert getattr(importlib.import_module(module), name) is main


def test_usage_errors():
    result = run_cli()
    assert result.returncode == 2 and "usage: chainkit" in result.stderr
    help_text = run_cli("run", "--help").stdout
    for option in ["-v", "--max-iterations", "--model", "--base-url"]:
        assert option in help_text


@pytest.mark.parametrize(
    ("env", "argv"),
    [
        ({"OPENAI_API_KEY": "sk-secret-test-key-0123456789abcdef"}, []),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, []),
        ({}, ["--base-url", "http://127.0.0.1:9/v1"]),
    ],
)
def test_openai_settings_select_the_openai_backend(monkeypatch, env, argv):
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    args = parser().parse_args(["run", *argv, "--model", "m-1", "hi"])
    model = _model(args)
    assert isinstance(model, OpenAI) and model.model == "m-1"
    assert "sk-secret-test-key-0123456789abcdef" not in repr(model)


def test_without_settings_the_offline_model_is_used(monkeypatch):
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    assert isinstance(_model(parser().parse_args(["run", "hi"])), OfflineModel)


def test_unreachable_endpoint_fails_with_a_clear_error_and_no_key():
    # Nothing listens on port 9 of loopback: the run fails in the OpenAI backend.
    env = {
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": "sk-secret-test-key-0123456789abcdef",
    }
    result = run_cli("run", "--max-iterations", "1", "hi", env_extra=env)
    assert result.returncode == 1
    assert "ModelConnectionError" in result.stderr and "127.0.0.1:9" in result.stderr
    assert "offline model" not in result.stderr
    assert "sk-secret-test-key-0123456789abcdef" not in result.stderr + result.stdout


def test_run_through_an_openai_compatible_server(openai_server):
    openai_server.push(
        " I should use the calculator.\nAction: calculator\nAction Input: 6*7",
        " I now know the final answer.\nFinal Answer: 42",
    )
    env = {"OPENAI_BASE_URL": openai_server.base_url}
    result = run_cli("run", "-v", "--model", "served-model", "what is 6*7?", env_extra=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "42\n"
    assert "offline model" not in result.stderr
    assert "   tool end: calculator output='42'\n" in result.stderr
    first, second = openai_server.chat_requests()
    assert first.body["model"] == "served-model"
    assert first.body["stop"] == ["\nObservation:", "\n\tObservation:"]
    assert "Observation: 42" in second.body["messages"][0]["content"]


def test_run_shows_the_usage_with_v_and_its_cost_with_prices(openai_server):
    usage = {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230}
    env = {"OPENAI_BASE_URL": openai_server.base_url}
    openai_server.push(Reply("Final Answer: 42", usage=usage))
    result = run_cli("run", "-v", "--model", "served-model", "6*7?", env_extra=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == (
        "chainkit: usage: served-model: 1 call, 1,200 tokens in, 30 out"
    )
    openai_server.push(Reply("Final Answer: 42", usage=usage))
    prices = '{"served-model": [0.5, 2]}'
    result = run_cli("run", "--model", "served-model", "--prices", prices, "6*7?", env_extra=env)
    assert result.stdout == "42\n"
    assert result.stderr == (
        "chainkit: usage: served-model: 1 call, 1,200 tokens in, 30 out, cost 0.00066\n"
    )


def test_run_without_v_or_prices_says_nothing_of_usage(openai_server):
    openai_server.push(Reply("Final Answer: 42"))
    result = run_cli("run", "6*7?", env_extra={"OPENAI_BASE_URL": openai_server.base_url})
    assert result.stdout == "42\n" and "usage" not in result.stderr


@pytest.fixture
def no_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.mark.usefixtures("no_endpoint")
def test_cli_returns_130_on_keyboard_interrupt(monkeypatch: pytest.MonkeyPatch):
    def interrupted(args: argparse.Namespace, executor: Executor) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(chainkit._cli.run, "_answer", interrupted)
    assert main(["run", "q"]) == 130


@pytest.mark.usefixtures("no_endpoint")
def test_cli_masks_keys_in_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    key = "sk-abcdefghijklmnopqrstuvwxyz1234"

    def failing(args: argparse.Namespace, executor: Executor) -> str:
        raise RuntimeError(f"rejected key {key}")

    monkeypatch.setattr(chainkit._cli.run, "_answer", failing)
    assert main(["run", "q"]) == 1
    captured = capsys.readouterr()
    assert key not in captured.err
    assert "chainkit: error: RuntimeError: rejected key sk-a***" in captured.err
    assert captured.out == ""


@pytest.mark.usefixtures("no_endpoint")
def test_cli_sends_parse_errors_back_to_the_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    fake = FakeLLM(["no format at all", " Final Answer: done"])

    def scripted(args: argparse.Namespace) -> Model:
        return fake

    monkeypatch.setattr(chainkit._cli.run, "_model", scripted)
    assert main(["run", "q"]) == 0
    assert capsys.readouterr().out == "done\n"
    assert len(fake.calls) == 2


def test_version_is_the_installed_one_and_read_only_when_asked():
    code = (
        "import sys, chainkit\n"
        "from chainkit._cli.entry_point import parser\n"
        "parser().parse_args(['trace', 'x'])\n"
        "print('__version__' in vars(chainkit))\n"
        "parser().parse_args(['--version'])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    import importlib.metadata

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "False",
        f"chainkit {importlib.metadata.version('chainkit')}",
    ]


def test_constrain_sends_the_agents_grammar_in_the_field_named(openai_server):
    openai_server.push(
        " I need the calculator\nAction: calculator\nAction Input: 6*7\n",
        " done\nFinal Answer: 42\n",
    )
    argv = ["run", "--constrain", "grammar", "--base-url", openai_server.base_url, "6*7?"]
    result = run_cli(*argv)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "42\n"
    first, second = (request.body["grammar"] for request in openai_server.chat_requests())
    assert matches(first, " go\nAction: random_number\nAction Input: 1-6\n")
    assert not matches(second, " go\nAction: random_number\nAction Input: 1-6\n")
    assert matches(second, " done\nFinal Answer: 42\n")


def test_constrain_nests_a_dotted_field(openai_server):
    openai_server.push(" ok\nFinal Answer: hi\n")
    argv = ["run", "--constrain", "structured_outputs.grammar", "hello"]
    result = run_cli(*argv, env_extra={"OPENAI_BASE_URL": openai_server.base_url})
    assert result.returncode == 0, result.stderr
    (body,) = (request.body for request in openai_server.chat_requests())
    assert matches(body["structured_outputs"]["grammar"], " ok\nFinal Answer: hi\n")
    assert "grammar" not in body


def test_a_server_refusing_the_grammar_is_named_with_the_flag(openai_server):
    openai_server.fail(Fault.http(400, "Unrecognized request argument supplied: grammar"))
    argv = ["run", "--constrain", "grammar", "--base-url", openai_server.base_url, "6*7?"]
    result = run_cli(*argv)
    assert result.returncode == 1 and result.stdout == ""
    assert "ConstraintRefusedError" in result.stderr
    assert "Unrecognized request argument supplied: grammar" in result.stderr
    hint = f"hint: the server at {openai_server.base_url} does not take a grammar in 'grammar'"
    assert hint in result.stderr
    assert "leave out --constrain" in result.stderr


def test_constrain_on_the_offline_model_is_a_usage_error_naming_base_url():
    # A keyword matcher decodes nothing: a grammar would be dropped without a word.
    result = run_cli("run", "--constrain", "grammar", "2+2")
    assert result.returncode == 2 and result.stdout == ""
    assert "--constrain grammar needs an OpenAI-compatible endpoint" in result.stderr
    assert "--base-url" in result.stderr


@pytest.mark.parametrize(
    ("field", "error"),
    [("a b", "--constrain: constrain='a b' is not a request field name"), (" ", "is empty")],
)
def test_constrain_naming_no_request_field_is_a_usage_error(field, error):
    argv = ["run", "--constrain", field, "--base-url", "http://127.0.0.1:9/v1", "2+2"]
    result = run_cli(*argv)
    assert result.returncode == 2 and result.stdout == ""
    assert error in result.stderr
