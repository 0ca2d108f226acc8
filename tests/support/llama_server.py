"""llama.cpp's OpenAI-compatible server (`llama-cpp-python[server]`) serving a real small model,
started in its own virtual environment and stopped by its process id.

The model is a base model, and its GGUF has no chat template (the server would fall back to
llama-2's `[INST]` wrapping, after which the model starts a new document rather than going
on with the prompt): the server gets the chat format "raw", registered here, which sends the
messages' text as it is, as a completions request would.

The environment is CHAINKIT_LLAMA_VENV (default: `.llama` at the repository root), the model
CHAINKIT_LLAMA_MODEL (default: `gemma.gguf` in that environment); `.ci/run` makes both."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parent.parent.parent
VENV_VARIABLE = "CHAINKIT_LLAMA_VENV"
MODEL_VARIABLE = "CHAINKIT_LLAMA_MODEL"
# Runs in the server's environment: registers the chat format, then starts the server as
# `python -m llama_cpp.server` would.
_LAUNCHER = """
import sys
from llama_cpp import llama_chat_format as formats
from llama_cpp.server.__main__ import main

@formats.register_chat_format("raw")
def raw(messages, **_):
    return formats.ChatFormatterResponse(prompt="".join(m["content"] or "" for m in messages))

sys.argv[0] = "llama_cpp.server"
main()
"""
START_TIMEOUT = 120.0
"""Seconds the server may take to load the model and answer: a few on two busy cores."""


def llama_venv() -> Path:
    return Path(os.environ.get(VENV_VARIABLE) or ROOT / ".llama")


def llama_model() -> Path:
    return Path(os.environ.get(MODEL_VARIABLE) or llama_venv() / "gemma.gguf")


def missing() -> str | None:
    """Why the server cannot start here, or None when it can."""
    python = llama_venv() / "bin" / "python"
    if not python.exists():
        return f"no llama.cpp environment at {llama_venv()} (set {VENV_VARIABLE})"
    if not llama_model().exists():
        return f"no model at {llama_model()} (set {MODEL_VARIABLE})"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class LlamaServer:
    """The server on a free loopback port while the `with` block runs; `base_url` for
    `llms.OpenAI`. Its log goes to `log_path`."""

    def __init__(self, log_path: Path, *, n_ctx: int = 4096) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_path
        self._command = [
            str(llama_venv() / "bin" / "python"),
            *("-c", _LAUNCHER, "--model", str(llama_model()), "--chat_format", "raw"),
            *("--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(n_ctx)),
        ]
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LlamaServer:
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                self._command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"llama.cpp's server exited; its log: {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=5):
                    return
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"llama.cpp's server did not answer in {START_TIMEOUT:g} s")

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        """Ends the server's process group (it was started in a session of its own)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)
