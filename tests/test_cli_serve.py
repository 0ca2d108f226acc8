"""`chainkit serve`: the command in a process of its own on a free port, called over real HTTP,
stopped with SIGTERM; and the settings it refuses before it listens."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from chainkit._cli.entry_point import main
from chainkit._cli.serve import is_loopback
from tests.support.extras import need_extra
from tests.support.serve_factories import HELD_DIR
from tests.support.serving import Answer, call

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "a-token-for-the-tests-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FACTORIES = "tests.support.serve_factories"
START_SECONDS = 60.0


@dataclass
class Served:
    """A `chainkit serve` process, its URL, and what it has said on stderr."""

    process: subprocess.Popen[str]
    url: str
    said: list[str] = field(default_factory=list)

    def stop(self) -> int:
        """SIGTERM, as a supervisor stops it; its exit status."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(START_SECONDS)

    def stderr(self) -> str:
        return "".join(self.said)


@contextmanager
def serving(*args: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """`chainkit serve ARGS --port 0`, once it answers /health; killed if the test left it
    running."""
    need_extra("uvicorn", "serve")
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "CHAINKIT_SERVE_TOKEN": TOKEN}
    environment.update(env or {})
    command = [sys.executable, "-m", "chainkit", "serve", *args, "--port", "0"]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # uvicorn's access log
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    # Read on once it has said where it listens: a server whose stderr pipe fills up stops.
    said: list[str] = []
    reader = threading.Thread(target=_read_on, args=(process, said), daemon=True)
    try:
        served = Served(process, _announced_url(process, said), said)
        reader.start()
        headers = {} if "--no-auth" in args else AUTH
        wait_until(lambda: _answers(served.url, headers), f"{served.url}/health to answer")
        yield served
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(START_SECONDS)
        if reader.ident is not None:  # started
            reader.join(START_SECONDS)  # all it said, for the test to read after the block


def _announced_url(process: subprocess.Popen[str], said: list[str]) -> str:
    assert process.stderr is not None
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        if select.select([process.stderr], [], [], 0.1)[0]:
            line = process.stderr.readline()
            said.append(line)
            if " at http://" in line:
                return line.split(" at ", 1)[1].split()[0]
    raise AssertionError(f"chainkit serve did not start: {''.join(said)}")


def _read_on(process: subprocess.Popen[str], said: list[str]) -> None:
    assert process.stderr is not None
    said.extend(process.stderr)


def _answers(url: str, headers: dict[str, str]) -> bool:
    try:
        return call(url, "GET", "/health", headers=headers, timeout=5).status == 200
    except OSError:
        return False


def wait_until(condition: Callable[[], bool], what: str, seconds: float = START_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds} s for {what}")
        time.sleep(0.02)


def in_background(request: Callable[[], Answer]) -> Callable[[], Answer]:
    """Starts `request` in a thread; a function that waits for its answer."""
    answers: list[Answer | BaseException] = []

    def run() -> None:
        try:
            answers.append(request())
        except BaseException as failed:
            answers.append(failed)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def answer() -> Answer:
        thread.join(START_SECONDS)
        assert answers, "the request did not end"
        if isinstance(answers[0], BaseException):
            raise answers[0]
        return answers[0]

    return answer


def serving_held(folder: Path, *args: str) -> AbstractContextManager[Served]:
    """`chainkit serve` of a chain whose runs wait, in `folder`, until the test lets them."""
    return serving(f"{FACTORIES}:held_awaiting", *args, env={HELD_DIR: str(folder)})


def held_request(served: Served, folder: Path, body: dict[str, str]) -> Callable[[], Answer]:
    """POSTs `body` to /invoke of a held chain in the background, once its run has started
    (in `folder`); a function that waits for the answer."""
    answer = in_background(lambda: call(served.url, "POST", "/invoke", body, AUTH))
    wait_until(lambda: bool(started_runs(folder)), "the run to start")
    return answer


def started_runs(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("started-*"))


def shutting_down(url: str) -> bool:
    """Whether the server says it is stopping: it still listens while it drains its runs,
    and answers that it is not ready."""
    answer = call(url, "GET", "/ready", headers=AUTH, timeout=5)
    return answer.status == 503 and answer.json()["error"]["code"] == "shutting_down"


# Served for real.


def test_it_serves_the_built_in_agent_to_callers_with_the_token() -> None:
    with serving() as served:
        assert call(served.url, "GET", "/health").status == 401
        wrong = {"Authorization": f"Bearer {TOKEN}x"}
        assert call(served.url, "POST", "/invoke", {"input": "hi"}, wrong).status == 401
        answer = call(served.url, "POST", "/invoke", {"input": "What is 6 * 7?"}, AUTH)
        assert answer.status == 200, answer.text
        assert answer.json()["outputs"] == {"output": "42"}
        assert served.stop() == 0
    said = served.stderr()
    assert "chainkit serve: serving the built-in offline agent" in said
    assert TOKEN not in said


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_lets_the_request_in_flight_finish_then_exits_0(
    tmp_path: Path, workers: str
) -> None:
    with serving_held(tmp_path, "--grace", "60", "--workers", workers) as served:
        answer = held_request(served, tmp_path, {"input": "in flight"})
        served.process.send_signal(signal.SIGTERM)
        # It takes no new run, still listening to say so, and waits for the one in flight.
        wait_until(lambda: shutting_down(served.url), "the server to begin its shutdown")
        if workers == "1":  # (of two, the one answering may not have been told yet)
            refused = call(served.url, "POST", "/invoke", {"input": "late"}, AUTH)
            assert (refused.status, refused.json()["error"]["code"]) == (503, "shutting_down")
        assert served.process.poll() is None
        (tmp_path / "release").touch()
        finished = answer()
        assert finished.status == 200, finished.text
        assert finished.json()["outputs"]["output"].startswith("in flight from ")
        assert served.process.wait(START_SECONDS) == 0
    assert len(started_runs(tmp_path)) == 1  # no late run ran


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_run_past_the_grace_is_answered_with_its_id_then_exits_0(
    tmp_path: Path, workers: str
) -> None:
    with serving_held(tmp_path, "--grace", "0.5", "--workers", workers) as served:
        answer = held_request(served, tmp_path, {"input": "never let go", "run_id": "cut-1"})
        assert served.stop() == 0
        cut = answer()
    assert cut.status == 503
    assert cut.json()["error"]["code"] == "shutting_down"
    assert cut.json()["error"]["run_id"] == "cut-1"


def test_two_workers_serve_two_requests_at_once(tmp_path: Path) -> None:
    env = {HELD_DIR: str(tmp_path)}
    with serving(f"{FACTORIES}:held_blocking", "--workers", "2", env=env) as served:
        first = in_background(lambda: call(served.url, "POST", "/invoke", {"input": "a"}, AUTH))
        wait_until(lambda: len(started_runs(tmp_path)) == 1, "the first run to start")
        # The first worker's event loop is held by its run: only the other can take this.
        second = in_background(lambda: call(served.url, "POST", "/invoke", {"input": "b"}, AUTH))
        wait_until(lambda: len(started_runs(tmp_path)) == 2, "the second run to start")
        (tmp_path / "release").touch()
        outputs = {first().json()["outputs"]["output"], second().json()["outputs"]["output"]}
        pids = {int(output.rsplit(" ", 1)[1]) for output in outputs}
        assert len(pids) == 2 and served.process.pid not in pids
        assert served.stop() == 0
    assert "with 2 workers" in served.stderr()


def test_a_worker_that_dies_is_replaced() -> None:
    with serving(f"{FACTORIES}:pid_of_the_server", "--workers", "2") as served:
        answer = call(served.url, "POST", "/invoke", {"input": "hi"}, AUTH)
        killed = int(answer.json()["outputs"]["output"].rsplit(" ", 1)[1])
        os.kill(killed, signal.SIGKILL)
        ended = f"chainkit serve: worker {killed} ended (exit status -9): replaced"
        wait_until(lambda: ended in served.stderr(), "the worker to be replaced")
        # And the server goes on answering.
        for _ in range(4):
            assert call(served.url, "POST", "/invoke", {"input": "hi"}, AUTH).status == 200
        assert served.stop() == 0


def test_workers_that_cannot_build_the_app_stop_the_command() -> None:
    # uvicorn would start a worker that crashed again and again; one that cannot start, not.
    need_extra("uvicorn", "serve")
    command = [sys.executable, "-m", "chainkit", "serve", f"{FACTORIES}:fails_in_workers"]
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "CHAINKIT_SERVE_TOKEN": TOKEN}
    stopped = subprocess.run(
        [*command, "--workers", "2", "--port", "0"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=environment,
        timeout=START_SECONDS,
    )
    assert stopped.returncode == 1
    assert (
        "chainkit serve: error: a worker could not build the app: ConnectionError: the database "
        "went away"
    ) in stopped.stderr
    assert "chainkit serve: error: the server did not start" in stopped.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_stops_it_as_sigterm_does(workers: str) -> None:
    with serving("--workers", workers) as served:
        served.process.send_signal(signal.SIGINT)
        assert served.process.wait(START_SECONDS) == 0
    assert "Traceback" not in served.stderr()


def test_db_is_the_checkpointer_of_the_served_agent(tmp_path: Path) -> None:
    from chainkit.checkpoints import SQLiteStore

    runs = tmp_path / "runs.db"
    with serving("--db", str(runs)) as served:
        body = {"input": "What is 6 * 7?", "run_id": "served-1"}
        assert call(served.url, "POST", "/invoke", body, AUTH).status == 200
        assert served.stop() == 0
    store = SQLiteStore(str(runs))
    try:
        assert [(run.run_id, run.status) for run in store.runs()] == [("served-1", "finished")]
    finally:
        store.close()


def test_the_limits_and_traces_given_are_the_servers() -> None:
    with serving("--max-body", "100", "--requests-per-minute", "1", "--traces-kept", "0") as served:
        big = {"input": "x" * 100}
        assert call(served.url, "POST", "/invoke", big, AUTH).json()["error"]["code"] == (
            "body_too_large"
        )
        done = call(served.url, "POST", "/invoke", {"input": "2 + 2"}, AUTH)
        assert done.status == 200
        again = call(served.url, "POST", "/invoke", {"input": "2 + 2"}, AUTH)
        assert (again.status, again.json()["error"]["code"]) == (429, "rate_limited")
        trace = call(served.url, "GET", f"/runs/{done.json()['run_id']}/trace", headers=AUTH)
        assert trace.status == 404  # none kept
        assert served.stop() == 0


def test_max_runs_per_client_is_the_servers(tmp_path: Path) -> None:
    with serving_held(tmp_path, "--max-runs-per-client", "1") as served:
        first = held_request(served, tmp_path, {"input": "first"})
        second = call(served.url, "POST", "/invoke", {"input": "second"}, AUTH)
        assert (second.status, second.json()["error"]["code"]) == (429, "too_many_runs")
        (tmp_path / "release").touch()
        assert first().status == 200
        assert served.stop() == 0


def test_a_chat_with_a_history_per_session_is_served(tmp_path: Path) -> None:
    with serving(f"{FACTORIES}:counting_chat", env={HELD_DIR: str(tmp_path)}) as served:
        said = []
        for session in ("ann", "ann", "bob"):
            body = {"input": "hi", "session_id": session}
            said.append(call(served.url, "POST", "/invoke", body, AUTH).json()["outputs"])
        assert served.stop() == 0
    assert said == [{"output": f"{n} messages"} for n in (1, 3, 1)]


def test_no_auth_serves_without_a_token_on_loopback() -> None:
    with serving("--no-auth", env={"CHAINKIT_SERVE_TOKEN": ""}) as served:
        answer = call(served.url, "POST", "/invoke", {"input": "What is 6 * 7?"})
        assert answer.json()["outputs"] == {"output": "42"}
        assert served.stop() == 0


# Refused before it listens.


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAINKIT_SERVE_TOKEN", TOKEN)


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (None, "set CHAINKIT_SERVE_TOKEN to the token clients must send"),
        ("", "CHAINKIT_SERVE_TOKEN is empty"),
        (" padded-token-0123456789 ", "printable ASCII, without spaces"),
        ("tøken-0123456789abcdef", "printable ASCII, without spaces"),
    ],
)
def test_the_token_must_come_from_the_environment_and_fit_a_header(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    token: str | None,
    message: str,
) -> None:
    monkeypatch.delenv("CHAINKIT_SERVE_TOKEN", raising=False)
    if token is not None:
        monkeypatch.setenv("CHAINKIT_SERVE_TOKEN", token)
    assert main(["serve"]) == 2
    said = capsys.readouterr().err
    assert message in said
    assert token is None or not token.strip() or token.strip() not in said


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com"])
def test_no_auth_is_refused_on_a_host_others_reach(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], host: str
) -> None:
    monkeypatch.delenv("CHAINKIT_SERVE_TOKEN", raising=False)
    assert main(["serve", "--no-auth", "--host", host]) == 2
    assert f"only on a loopback host (127.0.0.1, ::1, localhost), not {host}" in (
        capsys.readouterr().err
    )


def test_no_auth_with_a_token_is_refused_as_ambiguous(
    token: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--no-auth"]) == 2
    assert "--no-auth and CHAINKIT_SERVE_TOKEN are both given" in capsys.readouterr().err


def test_loopback_hosts() -> None:
    for host in ("127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LocalHost"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "10.0.0.1", "example.com", "localhost.example.com", "127.0.0"):
        assert not is_loopback(host), host


def test_a_short_token_is_served_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Warned of before the factory is loaded, which fails here so that nothing listens.
    need_extra("uvicorn", "serve")
    monkeypatch.setenv("CHAINKIT_SERVE_TOKEN", "short")
    assert main(["serve", f"{FACTORIES}:make_number"]) == 2
    said = capsys.readouterr().err
    assert "warning: CHAINKIT_SERVE_TOKEN has 5 characters" in said
    assert "short" not in said.replace("has 5 characters", "")


@pytest.mark.parametrize(
    ("factory", "status", "message"),
    [
        (FACTORIES, 2, "expected module:factory, such as mypackage.agents:make_agent"),
        ("tests.no_such_module:make", 2, "cannot import tests.no_such_module"),
        (f"{FACTORIES}:nothing", 2, "has no attribute 'nothing'"),
        (f"{FACTORIES}:make_number", 2, "gave int, not a chain"),
        (f"{FACTORIES}:broken", 1, "failed to build the chain: RuntimeError: no model configured"),
    ],
)
def test_a_factory_that_gives_no_chain_is_named(
    token: None, capsys: pytest.CaptureFixture[str], factory: str, status: int, message: str
) -> None:
    need_extra("uvicorn", "serve")
    assert main(["serve", factory]) == status
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (f"{FACTORIES}:held_awaiting", "--db is the checkpointer of an agents.Executor"),
        (f"{FACTORIES}:checkpointed_agent", "has a checkpointer already"),
    ],
)
def test_db_needs_an_executor_without_a_checkpointer(
    token: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    factory: str,
    message: str,
) -> None:
    need_extra("uvicorn", "serve")
    monkeypatch.chdir(tmp_path)
    assert main(["serve", factory, "--db", "runs.db"]) == 2
    assert message in capsys.readouterr().err


def test_a_db_that_cannot_open_is_named(
    token: None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    need_extra("uvicorn", "serve")
    assert main(["serve", "--db", str(tmp_path)]) == 1
    assert "--db: SQLiteStore(" in capsys.readouterr().err


def test_a_port_taken_is_named(token: None, capsys: pytest.CaptureFixture[str]) -> None:
    need_extra("uvicorn", "serve")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 1
    assert f"cannot listen on 127.0.0.1 port {port}" in capsys.readouterr().err


def test_without_the_serve_extra_it_says_what_to_install(
    token: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    assert main(["serve"]) == 1
    assert "it needs the serve extra: pip install 'chainkit[serve]'" in capsys.readouterr().err


def test_the_help_shows_the_servers_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    from chainkit.serving import ServerSettings

    with pytest.raises(SystemExit):
        main(["serve", "-h"])
    shown = " ".join(capsys.readouterr().out.split())
    defaults = ServerSettings(no_auth=True)
    for value in (
        defaults.max_body_bytes,
        defaults.max_runs_per_client,
        int(defaults.grace_seconds),
    ):
        assert f"(default {value})" in shown
