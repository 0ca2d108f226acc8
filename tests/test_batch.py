"""`chainkit batch`: every input line gets one result line, bad lines included; a job killed
mid-run (SIGKILL) resumes without losing, duplicating or corrupting a line; and
`chains.batch(progress=True)` shows the same progress line."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from chainkit import chains
from chainkit._batch.output import OutputFile, encode
from chainkit._cli.entry_point import main
from tests.support.batch_factories import BASE_URL_VARIABLE, CALLS_VARIABLE, Echo
from tests.support.openai_server import OpenAIServer, Reply

ROOT = Path(__file__).resolve().parent.parent


def batch(
    *args: str, timeout: float = 60, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(env_extra or {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "chainkit", "batch", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=timeout,
    )


def write_lines(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


def results(path: Path) -> list[dict[str, Any]]:
    """Every line of the output, each required to be a JSON object ending in a line break."""
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), "the output ends in a torn line"
    return [json.loads(line) for line in data.splitlines()]


def by_id(lines: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """The lines by id; a line without one by ("line", N), its input line's number."""
    found: dict[Any, dict[str, Any]] = {}
    for line in lines:
        key = ("line", line["line"]) if line["id"] is None else line["id"]
        assert key not in found, f"id {key} written twice"
        found[key] = line
    return found


@pytest.mark.timeout(60)
def test_every_line_gets_one_result_with_output_steps_usage_and_seconds(tmp_path):
    questions = {7: "what is 12*(3+4)?", "b": "what is 2+2?", 9: "1+1"}
    source = write_lines(
        tmp_path / "in.jsonl", [{"id": key, "input": text} for key, text in questions.items()]
    )
    out = tmp_path / "out.jsonl"
    result = batch(str(source), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "built-in offline agent" in result.stderr
    assert "3 runs done" in result.stderr
    lines = by_id(results(out))
    assert {key: line["output"] for key, line in lines.items()} == {7: "84", "b": "4", 9: "2"}
    for line in lines.values():
        assert line["steps"] == 1  # one calculator call, then the answer
        assert line["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        assert isinstance(line["seconds"], float) and line["seconds"] >= 0
        assert "error" not in line


@pytest.mark.timeout(60)
def test_bad_lines_are_reported_by_number_and_written_as_errors(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_bytes(
        b'{"id": 1, "input": "1+1"}\n'
        b"not json\n"
        b"\n"  # blank: skipped, not an error
        b'["a", "list"]\n'
        b'{"id": 5, "question": "no input key"}\n'
        b'{"id": [1], "input": "1+1"}\n'
        b'{"id": 7, "input": "\xff\xfe bytes"}\n'
        b'{"input": "2+2"}\n'
    )
    out = tmp_path / "out.jsonl"
    result = batch(str(source), "-o", str(out), "--agent", "tests.support.batch_factories:echo")
    assert result.returncode == 1
    lines = by_id(results(out))
    assert lines[1]["output"] == "echo: 1+1" and lines[("line", 8)]["output"] == "echo: 2+2"
    expected = {
        ("line", 2): "line 2: not JSON",
        ("line", 4): "line 4: a JSON list, not an object",
        5: "line 5: missing input 'input': the chain takes ['input'], the line gives ['question']",
        ("line", 6): "line 6: its id [1] is neither a string nor a whole number",
        ("line", 7): "line 7: not UTF-8 text (at byte 21)",
    }
    for run_id, message in expected.items():
        error = lines[run_id]["error"]
        assert error["type"] == "InputError" and error["message"].startswith(message)
        number = run_id[1] if isinstance(run_id, tuple) else run_id
        assert f"line {number} of {source}" in result.stderr
    assert set(lines) == {1, ("line", 2), ("line", 4), 5, ("line", 6), ("line", 7), ("line", 8)}


@pytest.mark.timeout(60)
def test_a_failed_run_is_an_error_line_with_the_key_masked_and_nan_is_still_json(tmp_path):
    source = write_lines(
        tmp_path / "in.jsonl", [{"id": 1, "input": "fail"}, {"id": 2, "input": "nan"}]
    )
    out = tmp_path / "out.jsonl"
    result = batch(str(source), "-o", str(out), "--agent", "tests.support.batch_factories:echo")
    assert result.returncode == 1
    assert "--retry-failed runs them again" in result.stderr
    lines = by_id(results(out))
    error = lines[1]["error"]
    assert error["type"] == "ValueError" and "asked to fail" in error["message"]
    assert "abcdefghijklmnop" not in out.read_text()
    assert lines[2]["output"] == "nan"


@pytest.mark.timeout(60)
def test_a_repeated_id_runs_once(tmp_path):
    source = write_lines(
        tmp_path / "in.jsonl",
        [{"id": 1, "input": "a"}, {"id": 1, "input": "b"}, {"id": "1", "input": "c"}],
    )
    out = tmp_path / "out.jsonl"
    result = batch(str(source), "-o", str(out), "--agent", "tests.support.batch_factories:echo")
    assert result.returncode == 0
    assert "line 2: id 1 was given before; this line is skipped" in result.stderr
    assert {line["id"]: line["output"] for line in results(out)} == {1: "echo: a", "1": "echo: c"}


@pytest.mark.timeout(120)
def test_a_job_killed_mid_run_resumes_without_losing_or_repeating_a_line(tmp_path):
    count = 400
    source = write_lines(tmp_path / "in.jsonl", [{"id": i, "input": f"q{i}"} for i in range(count)])
    out = tmp_path / "out.jsonl"
    args = [str(source), "-o", str(out), "--agent", "tests.support.batch_factories:slow_echo"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "chainkit", "batch", *args, "--concurrency", "20"]
    for _ in range(2):  # killed twice, at different points
        before = len(out.read_bytes().splitlines()) if out.exists() else 0
        job = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if out.exists() and len(out.read_bytes().splitlines()) >= before + 60:
                    break
                time.sleep(0.01)
            job.send_signal(signal.SIGKILL)
        finally:
            with contextlib.suppress(subprocess.TimeoutExpired):
                job.wait(10)
        assert job.returncode == -signal.SIGKILL
        data = out.read_bytes()
        whole = data if data.endswith(b"\n") else data[: data.rfind(b"\n") + 1]
        done = by_id([json.loads(line) for line in whole.splitlines()])
        assert 0 < len(done) < count  # killed mid-run: some done, not all
        assert all(line["output"] == f"echo: q{run_id}" for run_id, line in done.items())
    result = batch(*args, "--concurrency", "50")
    assert result.returncode == 0, result.stderr
    final = by_id(results(out))
    assert set(final) == set(range(count))
    assert all(line["output"] == f"echo: q{run_id}" for run_id, line in final.items())
    assert f"{len(done)} done before" in result.stderr


@pytest.mark.timeout(60)
def test_a_torn_last_line_is_repaired_and_its_run_done_again(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"id": i, "input": f"q{i}"} for i in range(3)])
    out = tmp_path / "out.jsonl"
    whole = encode({"id": 0, "output": "echo: q0", "steps": 0, "usage": {}, "seconds": 0.1})
    torn = encode({"id": 1, "output": "echo: q1"})[:-9]
    out.write_bytes(whole + torn)
    result = batch(str(source), "-o", str(out), "--agent", "tests.support.batch_factories:echo")
    assert result.returncode == 0
    assert "removed the torn last line" in result.stderr
    assert set(by_id(results(out))) == {0, 1, 2}
    assert out.read_bytes().startswith(whole)
    assert "1 done before" in result.stderr


def test_a_last_line_whole_but_for_its_break_is_kept(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"id": 0, "input": "q0"}])
    out = tmp_path / "out.jsonl"
    out.write_bytes(encode({"id": 0, "output": "kept"})[:-1])
    result = batch(str(source), "-o", str(out), "--agent", "tests.support.batch_factories:echo")
    assert result.returncode == 0
    assert results(out) == [{"id": 0, "output": "kept"}]


@pytest.mark.timeout(60)
def test_retry_failed_runs_the_failed_ids_again_and_replaces_their_lines(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"id": 1, "input": "a"}, {"id": 2, "input": "b"}])
    out = tmp_path / "out.jsonl"
    out.write_bytes(
        encode({"id": 1, "output": "echo: a"})
        + encode({"id": 2, "error": {"type": "ModelTimeoutError", "message": "slow"}})
    )
    result = batch(str(source), "-o", str(out), "--agent", "tests.support.batch_factories:echo")
    assert result.returncode == 1 and "1 failed" in result.stderr  # as it was
    result = batch(
        str(source),
        "-o",
        str(out),
        "--agent",
        "tests.support.batch_factories:echo",
        "--retry-failed",
    )
    assert result.returncode == 0, result.stderr
    assert by_id(results(out))[2]["output"] == "echo: b"
    assert len(results(out)) == 2


@pytest.mark.timeout(60)
def test_usage_sums_the_model_calls_of_each_run(tmp_path, monkeypatch, capsys):
    source = write_lines(tmp_path / "in.jsonl", [{"id": "q", "input": "what is 6*7?"}])
    out = tmp_path / "out.jsonl"
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    with OpenAIServer() as server:
        server.push(
            Reply(" I calculate.\nAction: calculator\nAction Input: 6*7", usage=usage),
            Reply(" I now know the final answer.\nFinal Answer: 42", usage=usage),
        )
        monkeypatch.setenv(BASE_URL_VARIABLE, server.base_url)
        status = main(
            [
                "batch",
                str(source),
                "-o",
                str(out),
                "--agent",
                "tests.support.batch_factories:loopback_agent",
            ]
        )
    assert status == 0, capsys.readouterr().err
    (line,) = results(out)
    assert line["output"] == "42" and line["steps"] == 1
    assert line["usage"] == {"prompt_tokens": 200, "completion_tokens": 40, "total_tokens": 240}
    assert line["usage_by_model"] == {
        "loopback-model": {"calls": 2, "input_tokens": 200, "output_tokens": 40}
    }


@pytest.mark.timeout(60)
def test_the_summary_totals_the_usage_of_the_jobs_runs_by_model_and_its_cost(
    tmp_path, monkeypatch, capsys
):
    source = write_lines(tmp_path / "in.jsonl", [{"id": i, "input": "6*7?"} for i in range(3)])
    out = tmp_path / "out.jsonl"
    usage = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
    with OpenAIServer() as server:
        server.push(*[Reply("Final Answer: 42", usage=usage)] * 3)
        monkeypatch.setenv(BASE_URL_VARIABLE, server.base_url)
        agent = ["--agent", "tests.support.batch_factories:loopback_agent"]
        prices = ["--prices", '{"loopback-model": [2, 8]}']
        status = main(["batch", str(source), "-o", str(out), *agent, *prices])
    assert status == 0
    summary = capsys.readouterr().err.splitlines()
    assert (
        "chainkit batch: usage: loopback-model: 3 calls, 3,000 tokens in, 300 out, cost 0.0084"
        in summary
    )
    assert [line["usage_by_model"]["loopback-model"]["calls"] for line in results(out)] == [1] * 3


def test_prices_that_cannot_be_are_a_usage_error(tmp_path, capsys):
    source = write_lines(tmp_path / "in.jsonl", [{"id": 1, "input": "x"}])
    with pytest.raises(SystemExit) as exited:
        main(["batch", str(source), "-o", str(tmp_path / "o"), "--prices", '{"m": [1, -2]}'])
    assert exited.value.code == 2
    assert "--prices: prices['m'] must be two amounts" in capsys.readouterr().err


@pytest.mark.timeout(60)
def test_progress_is_shown_when_asked_and_not_in_a_pipe_otherwise(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"id": i, "input": "x"} for i in range(5)])
    echo = ["--agent", "tests.support.batch_factories:echo"]
    quiet = batch(str(source), "-o", str(tmp_path / "a.jsonl"), *echo)
    assert "[" not in quiet.stderr and "/s" not in quiet.stderr
    shown = batch(str(source), "-o", str(tmp_path / "b.jsonl"), *echo, "--progress")
    assert "chainkit batch: [--------------------] 0/5" in shown.stderr
    assert "chainkit batch: [####################] 5/5" in shown.stderr


def test_chains_batch_shows_the_same_progress_line(capsys):
    chain = Echo()
    inputs = [{"input": "x"}, {"input": "fail"}, {"input": "y"}]
    results = chains.batch(chain, inputs, return_exceptions=True, progress=True)
    assert isinstance(results[1], ValueError)
    err = capsys.readouterr().err
    assert "chains.batch: [--------------------] 0/3" in err
    assert "chains.batch: [####################] 3/3 (1 failed)" in err
    assert chains.batch(chain, inputs[:1]) == [{"output": "echo: x"}]
    assert capsys.readouterr().err == ""


def test_chains_abatch_shows_it_too(capsys):
    import asyncio

    outputs = asyncio.run(chains.abatch(Echo(), [{"input": "x"}] * 4, progress=True))
    assert len(outputs) == 4
    assert "chains.abatch: [####################] 4/4" in capsys.readouterr().err


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "tests.support.batch_factories:not_a_chain"], "gave list, not a chain"),
        (["--agent", "tests.support.batch_factories:nothing"], "has no attribute 'nothing'"),
        (["--agent", "no_such_module:f"], "cannot import no_such_module"),
        (["--agent", "nocolon"], "expected module:factory"),
    ],
)
def test_a_factory_that_gives_no_chain_is_named(tmp_path, args, message):
    source = write_lines(tmp_path / "in.jsonl", [{"input": "x"}])
    result = batch(str(source), "-o", str(tmp_path / "out.jsonl"), *args)
    assert result.returncode == 2 and message in result.stderr


def test_a_factory_that_fails_is_reported(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"input": "x"}])
    result = batch(
        str(source),
        "-o",
        str(tmp_path / "o.jsonl"),
        "--agent",
        "tests.support.batch_factories:broken",
    )
    assert result.returncode == 1
    assert "failed to build the chain: RuntimeError: the factory could not start" in result.stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--ray-address", "ray://x:1"], "--ray-address needs --engine ray"),
        (["--actors", "2"], "--actors needs --engine ray"),
        (["--ray-runtime-env", "{}"], "--ray-runtime-env needs --engine ray"),
        (["--engine", "ray", "--ray-runtime-env", "[1]"], "expected a JSON object"),
        (["--engine", "ray", "--ray-runtime-env", "{pip"], "--ray-runtime-env: not JSON"),
        (["--concurrency", "0"], "--concurrency: must be at least 1"),
        (["--engine", "spark"], "invalid choice: 'spark'"),
    ],
)
def test_bad_arguments_are_named(tmp_path, extra, message):
    source = write_lines(tmp_path / "in.jsonl", [{"input": "x"}])
    result = batch(str(source), "-o", str(tmp_path / "out.jsonl"), *extra)
    assert result.returncode == 2 and message in result.stderr


def test_missing_input_and_output_over_input_are_refused(tmp_path):
    result = batch(str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "out.jsonl"))
    assert result.returncode == 2 and "missing.jsonl: no such file" in result.stderr
    source = write_lines(tmp_path / "in.jsonl", [{"input": "x"}])
    result = batch(str(source), "-o", str(source))
    assert result.returncode == 2 and "must not be the input file" in result.stderr
    assert source.read_text() == '{"input": "x"}\n'


def test_a_directory_as_input_is_named(tmp_path):
    result = batch(str(tmp_path), "-o", str(tmp_path / "out.jsonl"))
    assert result.returncode == 2 and f"{tmp_path} is not a file" in result.stderr


def test_a_chain_with_a_memory_is_warned_about(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"input": "hi"}, {"input": "again"}])
    out = tmp_path / "out.jsonl"
    result = batch(
        str(source), "-o", str(out), "--agent", "tests.support.batch_factories:with_memory"
    )
    assert result.returncode == 0
    assert "has a memory, which every run reads and adds to" in result.stderr
    assert [line["output"] for line in results(out)] == ["hello", "hello"]


def test_a_second_job_on_the_same_output_is_refused(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"input": "x"}])
    out = tmp_path / "out.jsonl"
    holder = OutputFile(str(out))
    try:
        result = batch(str(source), "-o", str(out))
    finally:
        holder.close()
    assert result.returncode == 1
    assert "is being written by another chainkit batch" in result.stderr


def test_engine_ray_without_ray_says_how_to_get_it(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"input": "x"}])
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from chainkit._cli.entry_point import main\n"
        f"sys.exit(main(['batch', {str(source)!r}, '-o', {str(tmp_path / 'o.jsonl')!r}, "
        "'--engine', 'ray']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.returncode == 1
    assert "pip install 'chainkit[ray]'" in result.stderr


# A failed write stops the job at once


def counted_batch(
    tmp_path: Path, *args: str, timeout: float = 60
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`batch` with the counting_echo agent; and the inputs of the runs it made."""
    calls = tmp_path / "calls.txt"
    calls.write_text("")
    agent = ["--agent", "tests.support.batch_factories:counting_echo"]
    done = batch(*args, *agent, timeout=timeout, env_extra={CALLS_VARIABLE: str(calls)})
    return done, calls.read_text().splitlines()


def assert_one_clear_error_line(stderr: str, reason: str) -> None:
    errors = [line for line in stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, stderr
    assert errors[0].startswith("chainkit batch: error: cannot write to ")
    assert reason in errors[0] and "run the same command again to go on" in errors[0]
    assert "Traceback" not in stderr and "never retrieved" not in stderr


@pytest.mark.timeout(60)
def test_a_full_device_stops_the_job_before_more_runs(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"id": i, "input": f"q{i}"} for i in range(600)])
    result, calls = counted_batch(tmp_path, str(source), "-o", "/dev/full", "--concurrency", "4")
    assert result.returncode == 74, result.stderr
    assert_one_clear_error_line(result.stderr, "No space left on device")
    assert len(calls) <= 8  # the first result failed: only the runs in flight then were made


@pytest.mark.timeout(60)
def test_a_bad_line_that_cannot_be_written_stops_the_job_too(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", ["not json", {"id": 1, "input": "a"}])
    result, calls = counted_batch(tmp_path, str(source), "-o", "/dev/full")
    assert result.returncode == 74 and calls == []
    assert_one_clear_error_line(result.stderr, "No space left on device")


@pytest.mark.timeout(120)
def test_a_full_disk_stops_the_job_and_leaves_whole_lines_to_resume_from(tmp_path):
    from tests.test_batch_output import tiny_filesystem

    count = 300
    source = write_lines(
        tmp_path / "in.jsonl", [{"id": i, "input": f"{i:04d}" + "x" * 500} for i in range(count)]
    )
    with tiny_filesystem(tmp_path / "tiny", "32k") as tiny:
        out = tiny / "out.jsonl"
        result, calls = counted_batch(tmp_path, str(source), "-o", str(out), "--concurrency", "3")
        assert result.returncode == 74, result.stderr
        assert_one_clear_error_line(result.stderr, "No space left on device")
        written = by_id(results(out))  # whole lines only: the torn one was cut back
        assert 0 < len(written) < count
        assert len(calls) <= len(written) + 6
        (tmp_path / "moved.jsonl").write_bytes(out.read_bytes())
    moved = tmp_path / "moved.jsonl"
    result, calls = counted_batch(tmp_path, str(source), "-o", str(moved))
    assert result.returncode == 0, result.stderr
    assert len(calls) == count - len(written)
    assert set(by_id(results(moved))) == set(range(count))


# Ids never collide


@pytest.mark.timeout(60)
def test_a_line_without_an_id_never_takes_the_id_of_a_real_record(tmp_path):
    source = write_lines(
        tmp_path / "in.jsonl",
        [
            "not json",
            {"input": "no id"},
            {"id": 1, "input": "one"},
            {"id": 2, "input": "two"},
            {"id": "line 1", "input": "text id"},
        ],
    )
    out = tmp_path / "out.jsonl"
    result, calls = counted_batch(tmp_path, str(source), "-o", str(out))
    assert result.returncode == 1, result.stderr
    assert "given before" not in result.stderr
    lines = by_id(results(out))
    assert set(lines) == {("line", 1), ("line", 2), 1, 2, "line 1"}
    assert lines[("line", 1)]["error"]["type"] == "InputError"
    assert lines[("line", 2)]["output"] == "echo: no id"
    assert sorted(calls) == ["no id", "one", "text id", "two"]
    for again in ([], ["--retry-failed"]):  # resumed: nothing is taken for another
        result, calls = counted_batch(tmp_path, str(source), "-o", str(out), *again)
        assert "given before" not in result.stderr
        assert calls == []
        assert set(by_id(results(out))) == {("line", 1), ("line", 2), 1, 2, "line 1"}
    assert "4 done before" in result.stderr


# Outputs that are not regular files


@pytest.mark.timeout(60)
def test_the_output_can_be_a_pipe(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"id": i, "input": f"q{i}"} for i in range(5)])
    result = batch(
        str(source), "-o", "/dev/stdout", "--agent", "tests.support.batch_factories:echo"
    )
    assert result.returncode == 0, result.stderr
    lines = by_id([json.loads(line) for line in result.stdout.splitlines()])
    assert {key: line["output"] for key, line in lines.items()} == {
        i: f"echo: q{i}" for i in range(5)
    }


@pytest.mark.timeout(60)
def test_the_output_can_be_dev_null(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"id": 1, "input": "a"}])
    for _ in range(2):  # nothing to resume from: run again, it runs again
        result, calls = counted_batch(tmp_path, str(source), "-o", "/dev/null")
        assert result.returncode == 0, result.stderr
        assert calls == ["a"] and "1 run done" in result.stderr


@pytest.mark.timeout(60)
def test_retry_failed_writes_through_a_symlinked_output(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"id": 1, "input": "a"}, {"id": 2, "input": "b"}])
    target = tmp_path / "real.jsonl"
    target.write_bytes(encode({"id": 1, "output": "echo: a"}) + encode({"id": 2, "error": {}}))
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    result = batch(
        str(source),
        "-o",
        str(link),
        "--agent",
        "tests.support.batch_factories:echo",
        "--retry-failed",
    )
    assert result.returncode == 0, result.stderr
    assert link.is_symlink()
    assert {line["id"]: line["output"] for line in results(target)} == {1: "echo: a", 2: "echo: b"}


# Signals and a second job


def start_batch(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "chainkit", "batch", *args]
    return subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)


def wait_for_lines(out: Path, count: int, job: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and job.poll() is None:
        if out.exists() and len(out.read_bytes().splitlines()) >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"the job did not write {count} lines")


@pytest.mark.timeout(120)
def test_sigterm_stops_the_job_as_ctrl_c_does_and_says_how_to_go_on(tmp_path):
    count = 400
    source = write_lines(tmp_path / "in.jsonl", [{"id": i, "input": f"q{i}"} for i in range(count)])
    out = tmp_path / "out.jsonl"
    args = [str(source), "-o", str(out), "--agent", "tests.support.batch_factories:slow_echo"]
    job = start_batch(*args, "--concurrency", "4")
    try:
        wait_for_lines(out, 10, job)
        job.send_signal(signal.SIGTERM)
        _, stderr = job.communicate(timeout=30)
    finally:
        job.kill()
    assert job.returncode == 143, stderr
    (said,) = [line for line in stderr.splitlines() if "terminated" in line]
    assert said.startswith("chainkit batch: terminated (SIGTERM) after ")
    assert said.endswith(" runs; the same command goes on where this one stopped")
    assert "Traceback" not in stderr
    done = by_id(results(out))
    assert 0 < len(done) < count
    result = batch(*args, "--concurrency", "50")
    assert result.returncode == 0, result.stderr
    assert set(by_id(results(out))) == set(range(count))
    assert f"{len(done)} done before" in result.stderr


@pytest.mark.timeout(120)
def test_a_second_job_is_refused_while_a_retry_failed_one_runs(tmp_path):
    count = 2000  # 100 s of runs one at a time: the first job runs still when the second starts
    source = write_lines(tmp_path / "in.jsonl", [{"id": i, "input": f"q{i}"} for i in range(count)])
    out = tmp_path / "out.jsonl"
    out.write_bytes(encode({"id": 0, "error": {"type": "E", "message": "m"}}))
    args = [str(source), "-o", str(out), "--agent", "tests.support.batch_factories:slow_echo"]
    job = start_batch(*args, "--retry-failed", "--concurrency", "1")
    try:
        wait_for_lines(out, 3, job)
        second = batch(*args)
    finally:
        job.kill()
        job.communicate(timeout=30)
    assert second.returncode == 1
    assert "is being written by another chainkit batch" in second.stderr


# Counts are written as words are


def test_counts_of_one_are_singular(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [{"id": 1, "input": "a"}, {"id": 1, "input": "b"}])
    result = batch(
        str(source),
        "-o",
        str(tmp_path / "out.jsonl"),
        "--agent",
        "tests.support.batch_factories:echo",
    )
    assert result.returncode == 0
    assert "chainkit batch: 1 run done, 1 line with a repeated id skipped, in " in result.stderr


@pytest.mark.timeout(30)
def test_run_all_starts_no_run_once_a_result_cannot_be_written():
    import asyncio
    import gc

    from chainkit import OutputWriteError
    from chainkit._batch.records import Record
    from chainkit._batch.runner import run_all

    started: list[str] = []

    class Noting(Echo):
        async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
            started.append(inputs["input"])
            return await super()._acall(inputs, **options)

    def finish(result: dict[str, Any]) -> None:
        raise OutputWriteError("cannot write to out.jsonl: No space left on device")

    noise: list[dict[str, Any]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: noise.append(context)
        )
        records = (Record(i, i + 1, {"input": f"q{i}"}) for i in range(600))
        try:
            await run_all(Noting(delay=0.01), records, 3, finish)
        finally:
            gc.collect()  # a task whose exception nobody took complains as it is collected

    with pytest.raises(OutputWriteError, match="No space left"):
        asyncio.run(main())
    assert len(started) == 3  # the runs in flight when the first result failed, no more
    assert noise == []


@pytest.mark.timeout(60)
def test_the_progress_total_counts_runs_done_before_and_not_repeated_ids(tmp_path):
    source = write_lines(
        tmp_path / "in.jsonl",
        [{"id": 1, "input": "a"}, {"id": 1, "input": "again"}, {"id": 2, "input": "b"}],
    )
    out = tmp_path / "out.jsonl"
    out.write_bytes(encode({"id": 1, "error": {"type": "E", "message": "m"}}))
    result = batch(
        str(source), "-o", str(out), "--agent", "tests.support.batch_factories:echo", "--progress"
    )
    assert result.returncode == 1
    assert "chainkit batch: [####################] 2/2 " in result.stderr
    assert "chainkit batch: 1 run done, 1 done before (1 failed), 1 line with a repeated id" in (
        result.stderr
    )
