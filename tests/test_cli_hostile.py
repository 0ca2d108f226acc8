"""The `chainkit` command under hostile use: bad flags, odd questions, a reader that goes
away, a stalled or rate-limited server, Ctrl-C. Every run is a subprocess with a timeout; it
ends with an exit code and a message, never a traceback."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

from tests.support.openai_server import Fault, OpenAIServer

TIMEOUT = 30
_FROM_MAIN = "import sys; from chainkit._cli.entry_point import main; sys.exit(main(sys.argv[1:]))"


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(extra or {})
    return env


def run_cli(
    *args: str | bytes, env: dict[str, str] | None = None, **kwargs
) -> subprocess.CompletedProcess[str]:
    if "stdout" not in kwargs and "stderr" not in kwargs:
        kwargs["capture_output"] = True
    return subprocess.run(
        [sys.executable, "-m", "chainkit", *args],
        text=True,
        env=environment(env),
        timeout=TIMEOUT,
        **kwargs,
    )


def assert_no_traceback(stderr: str) -> None:
    for sign in ("Traceback", "Exception ignored", "BrokenPipeError", "KeyboardInterrupt"):
        assert sign not in stderr, stderr


# Bad flags: exit 2, the flag named, what was expected said.

BAD_FLAGS = [
    (["--max-iterations", "0"], "argument --max-iterations: must be at least 1, got 0"),
    (["--max-iterations", "many"], "--max-iterations: expected a whole number, got 'many'"),
    (["--timeout", "-1"], "--timeout: must be a finite number of seconds, more than zero"),
    (["--timeout", "nan"], "--timeout: must be a finite number of seconds, more than zero"),
    (["--timeout", "inf"], "--timeout: must be a finite number of seconds, more than zero"),
    (["--timeout", "soon"], "--timeout: expected a number of seconds, got 'soon'"),
    (["--max-attempts", "0"], "argument --max-attempts: must be at least 1, got 0"),
    (["--base-url", ""], "argument --base-url: is empty"),
    (["--model", " "], "argument --model: is empty"),
    (["--timeout", "5"], "--timeout 5.0 needs an OpenAI-compatible endpoint"),
    (["--max-attempts", "2"], "--max-attempts 2 needs an OpenAI-compatible endpoint"),
    (
        ["--base-url", "localhost:18555/ok"],
        "base_url 'localhost:18555/ok' has no scheme: did you mean 'http://localhost:18555/ok'?",
    ),
    (["--verbose=yes"], "argument -v/--verbose: ignored explicit argument 'yes'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
]


@pytest.mark.parametrize(("flags", "message"), BAD_FLAGS)
def test_a_bad_flag_is_named_with_what_was_expected(flags: list[str], message: str) -> None:
    result = run_cli("run", *flags, "what is 2+2?")
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert result.stdout == ""
    assert_no_traceback(result.stderr)


def test_credentials_in_a_bad_base_url_are_masked() -> None:
    secret = "sk-proj-SECRETSECRETSECRET"
    result = run_cli("run", "--base-url", f"user:{secret}@localhost:8000/v1", "q")
    assert result.returncode == 2
    assert "did you mean 'http://***@localhost:8000/v1'?" in result.stderr
    assert "SECRET" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "the following arguments are required: question"),
        (["-5+3"], "a question that starts with '-' goes after '--', as in: chainkit run -- -5+3"),
        (["what", "is", "2+2?"], "goes in quotes, as in: chainkit run 'what is 2+2?'"),
        ([""], "argument QUESTION: the question is empty"),
        ([" \n\t "], "argument QUESTION: the question is empty"),
    ],
)
def test_a_missing_empty_or_unquoted_question_says_how_to_ask(
    args: list[str], message: str
) -> None:
    result = run_cli("run", *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert_no_traceback(result.stderr)


def test_a_question_starting_with_a_dash_runs_after_the_separator() -> None:
    assert run_cli("run", "--", "-5+3").stdout == "-2\n"


def test_a_question_that_is_not_utf8_is_refused() -> None:
    result = run_cli(b"run", b"what is \xff?")
    assert result.returncode == 2
    assert "the question is not valid UTF-8 text (at character 9)" in result.stderr


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("计算 (3+4)*6 等于多少？", "42\n"),
        ("what is 6*7? 🤖👍🏽", "42\n"),
        ("ما هو 6*7؟ \u202e", "42\n"),
        ("6*7 e\u0301\u200b\ufeff", "42\n"),
    ],
)
def test_unicode_questions_are_answered(question: str, answer: str) -> None:
    result = run_cli("run", question)
    assert (result.returncode, result.stdout) == (0, answer), result.stderr


def test_control_characters_reach_the_trace_escaped() -> None:
    result = run_cli("run", "-v", "what is 6*7?\x1b[2J\x1b]0;owned\x07\r")
    assert result.stdout == "42\n"
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr and "\r" not in result.stderr
    assert "6*7?\\x1b[2J\\x1b]0;owned\\x07\\r" in result.stderr


def test_a_huge_question_is_answered_and_its_trace_lines_stay_short() -> None:
    question = "告诉我一个随机数 " * 4000  # 36,000 characters, 104 kB: near the argv limit
    result = run_cli("run", "-v", question)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().isdigit()
    trace = [line for line in result.stderr.splitlines() if line.startswith("[chainkit]")]
    assert max(map(len, trace)) < 4200
    assert "characters cut]…" in result.stderr


# A reader that goes away, a closed stderr.


def closed_pipe() -> int:
    """The write end of a pipe whose reader has gone: any write to it fails with EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


@pytest.mark.parametrize("verbose", [[], ["-v"]])
def test_stdout_whose_reader_went_away_ends_quietly(verbose: list[str]) -> None:
    # `chainkit run … | head -c0`, with no race: the reader is gone before the first write.
    broken = closed_pipe()
    try:
        result = run_cli("run", *verbose, "what is 2+2?", stdout=broken, stderr=subprocess.PIPE)
    finally:
        os.close(broken)
    assert result.returncode == 141
    assert_no_traceback(result.stderr)


def test_a_shell_pipe_into_head_ends_quietly() -> None:
    command = f"{sys.executable} -m chainkit run 'what is 2+2?' | head -c0"
    result = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, env=environment(), timeout=TIMEOUT
    )
    assert result.returncode == 0
    assert_no_traceback(result.stderr)


@pytest.mark.parametrize("verbose", [[], ["-v"]])
def test_a_broken_or_closed_stderr_still_gives_the_answer(verbose: list[str]) -> None:
    broken = closed_pipe()
    try:
        result = run_cli("run", *verbose, "what is 2+2?", stdout=subprocess.PIPE, stderr=broken)
    finally:
        os.close(broken)
    assert (result.returncode, result.stdout) == (0, "4\n")
    command = f"{sys.executable} -m chainkit run {' '.join(verbose)} 'what is 2+2?' 2>&-"
    result = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, env=environment(), timeout=TIMEOUT
    )
    assert (result.returncode, result.stdout) == (0, "4\n")  # and no notice on stdout


# Every command's error, with stderr closed or broken: the command's own exit status, and
# nothing on stdout, which holds the answer, the trace tree or the MCP protocol.

COMMAND_ERRORS = [
    (["run", "--max-iterations", "1", "2+2"], 1),
    (["batch", "in.jsonl", "-o", "out.jsonl", "--agent", "no_such_module:make"], 2),
    (["trace", "no-such-trace.jsonl"], 1),
    (["mcp-serve", "no_such_module:make"], 2),
    (["serve", "no_such_module:make"], 2),
]
COMMAND_NAMES = [args[0] for args, _ in COMMAND_ERRORS]


@pytest.mark.parametrize(("args", "status"), COMMAND_ERRORS, ids=COMMAND_NAMES)
def test_an_error_with_stderr_closed_stays_off_stdout(
    tmp_path, args: list[str], status: int
) -> None:
    (tmp_path / "in.jsonl").write_text('{"input": "2+2"}\n')
    command = " ".join(shlex.quote(word) for word in (sys.executable, "-m", "chainkit", *args))
    result = subprocess.run(
        ["sh", "-c", f"{command} 2>&-"],
        capture_output=True,
        text=True,
        env=environment(),
        cwd=tmp_path,
        timeout=TIMEOUT,
    )
    assert (result.returncode, result.stdout) == (status, "")


@pytest.mark.parametrize(("args", "status"), COMMAND_ERRORS, ids=COMMAND_NAMES)
def test_an_error_with_stderr_broken_keeps_its_exit_status(
    tmp_path, args: list[str], status: int
) -> None:
    (tmp_path / "in.jsonl").write_text('{"input": "2+2"}\n')
    broken = closed_pipe()
    try:
        result = run_cli(*args, stdout=subprocess.PIPE, stderr=broken, cwd=tmp_path)
    finally:
        os.close(broken)
    assert (result.returncode, result.stdout) == (status, "")


# A stalled or rate-limited server.


def test_a_stalled_server_gets_one_line_per_retry_and_a_final_count(
    openai_server: OpenAIServer,
) -> None:
    openai_server.fail(Fault.slow(60), Fault.slow(60), Fault.slow(60))
    started = time.monotonic()
    result = run_cli(
        "run",
        "--timeout",
        "0.5",
        "--max-attempts",
        "3",
        "what is 2+2?",
        env={"OPENAI_BASE_URL": openai_server.base_url},
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    url = f"{openai_server.base_url}/chat/completions"
    assert [line.split("; retrying in")[0] for line in lines[:2]] == [
        f"chainkit: attempt {n} of 3 failed (ModelTimeoutError: {url} did not answer within 0.5 s)"
        for n in (1, 2)
    ]
    assert all(line.endswith(" s") for line in lines[:2])
    assert lines[2:] == [
        f"chainkit: error: ModelTimeoutError: {url} did not answer within 0.5 s "
        "(gave up after 3 attempts)",
        "chainkit: hint: allow more time with --timeout SECONDS, or more attempts with "
        "--max-attempts N",
    ]
    assert len(openai_server.requests) == 3
    assert elapsed < 50  # three 0.5 s attempts and two short waits, not one 60 s stall


def test_a_rate_limited_server_is_waited_for_as_it_asks(openai_server: OpenAIServer) -> None:
    openai_server.fail(Fault.http(429, "slow down", headers={"Retry-After": "0.3"}))
    openai_server.push(" I know.\nFinal Answer: 4")
    result = run_cli("run", "what is 2+2?", env={"OPENAI_BASE_URL": openai_server.base_url})
    assert (result.returncode, result.stdout) == (0, "4\n"), result.stderr
    assert result.stderr == (
        f"chainkit: attempt 1 of 5 failed (ModelStatusError: POST {openai_server.base_url}"
        "/chat/completions answered 429 Too Many Requests: slow down); retrying in 0.3 s "
        "(the server asked for 0.3 s)\n"
    )


def test_with_verbose_the_trace_reports_the_retries(openai_server: OpenAIServer) -> None:
    openai_server.fail(Fault.http(503))
    openai_server.push(" I know.\nFinal Answer: 4")
    result = run_cli("run", "-v", "what is 2+2?", env={"OPENAI_BASE_URL": openai_server.base_url})
    assert result.stdout == "4\n"
    assert "[chainkit] 000002   retry: attempt 1 failed (ModelStatusError:" in result.stderr
    assert "chainkit: attempt" not in result.stderr  # one report per retry, not two


def test_a_step_limit_suggests_max_iterations(openai_server: OpenAIServer) -> None:
    openai_server.push("no format", "still no format")
    result = run_cli(
        "run",
        "--max-iterations",
        "2",
        "what is 2+2?",
        env={"OPENAI_BASE_URL": openai_server.base_url},
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "chainkit: error: NotFinishedError: agent not finished: reached max_iterations=2; all 2 "
        "replies of the model could not be parsed; the last was 'still no format' (Invalid "
        "Format: Missing 'Action:' after 'Thought:')",
        "chainkit: hint: allow more steps with --max-iterations 4",
    ]


# Ctrl-C.


def interrupt_while_waiting(server: OpenAIServer, *flags: str) -> tuple[int, str]:
    """Starts the CLI against `server`, sends SIGINT once its first request has arrived (and
    a moment more), and returns the exit code and stderr."""
    # SIGINT restored to Python's handler, as a shell's background job may start ignoring it.
    code = f"import signal; signal.signal(signal.SIGINT, signal.default_int_handler); {_FROM_MAIN}"
    process = subprocess.Popen(
        [sys.executable, "-c", code, "run", *flags, "what is 2+2?"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment({"OPENAI_BASE_URL": server.base_url}),
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        process.kill()
        process.wait()
    return process.returncode, stderr


def test_ctrl_c_while_the_server_stalls_exits_130_with_one_line(
    openai_server: OpenAIServer,
) -> None:
    openai_server.fail(Fault.slow(20))
    assert interrupt_while_waiting(openai_server) == (130, "chainkit: interrupted\n")


def test_ctrl_c_while_waiting_to_retry_exits_130_with_one_line(
    openai_server: OpenAIServer,
) -> None:
    openai_server.fail(Fault.http(429, headers={"Retry-After": "20"}))
    returncode, stderr = interrupt_while_waiting(openai_server)
    assert returncode == 130
    assert stderr.splitlines()[-1] == "chainkit: interrupted"
    assert "retrying in 20.0 s" in stderr
    assert_no_traceback(stderr)
