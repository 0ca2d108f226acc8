"""Headless Chromium driven over the DevTools protocol, on the pipe Chromium opens with
--remote-debugging-pipe (it reads commands from fd 3 and writes replies to fd 4, each a JSON
message ending in NUL): open a page, run a script in it, take a screenshot. Standard library
only; every wait is bounded."""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

CHROMIUM = shutil.which("chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
WAIT_SECONDS = 60.0


class Chromium:
    """One headless browser with one page of `width` x `height` pixels."""

    def __init__(self, profile: Path, width: int = 1200, height: int = 800) -> None:
        assert CHROMIUM is not None, "CI must have chromium: .ci/run installs it"
        to_browser, self._commands = os.pipe()
        self._replies, from_browser = os.pipe()
        # bash puts the two ends on the descriptors Chromium reads and writes: 3 and 4.
        remap = f'exec "$@" 3<&{to_browser} 4>&{from_browser}'
        self._process = subprocess.Popen(
            ["bash", "-c", remap, "chromium", CHROMIUM, *FLAGS, "--remote-debugging-pipe",
             f"--user-data-dir={profile}", f"--window-size={width},{height}"],
            pass_fds=(to_browser, from_browser),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self._session: str | None = None
        self._size = (width, height)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(
        self,
        error_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Asks the browser to close (its pages and helper processes with it); kills it if it
        has not within the wait."""
        try:
            os.write(
                self._commands, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0"
            )
            self._process.wait(WAIT_SECONDS)
        except (OSError, subprocess.TimeoutExpired):
            self._process.kill()
            self._process.wait(WAIT_SECONDS)
        finally:
            os.close(self._commands)
            os.close(self._replies)

    def open(self, url: str) -> None:
        """Opens `url` in a new page and waits for its load event."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.send("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        width, height = self._size
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)  # fmt: skip
        self.send("Page.enable")
        self._events.clear()
        self.send("Page.navigate", url=url)
        self._wait_for_event("Page.loadEventFired")

    def navigate_by(self, expression: str) -> None:
        """Runs the JavaScript `expression`, which makes the page go to another (submits a
        form, follows a link), and waits for that page's load event."""
        self._events.clear()
        self.evaluate(expression)
        self._wait_for_event("Page.loadEventFired")

    def wait_for(self, condition: str, seconds: float = 30.0) -> Any:
        """The value of the JavaScript `condition` once it is truthy, checked in the page
        every 50 ms; an AssertionError if it is not within `seconds` (under WAIT_SECONDS)."""
        found = self.evaluate(f"""new Promise((resolve) => {{
          const deadline = Date.now() + {seconds * 1000:.0f};
          const check = () => {{
            let value = null;
            try {{ value = ({condition}); }} catch (error) {{ value = null; }}
            if (value || Date.now() > deadline) resolve(value || null);
            else setTimeout(check, 50);
          }};
          check();
        }})""")
        if found is None:  # a value that is no JSON (a DOM node) comes back as {}
            raise AssertionError(f"not within {seconds:.0f} s: {condition}")
        return found

    def evaluate(self, expression: str) -> Any:
        """The value of the JavaScript `expression` in the page, a promise awaited."""
        reply = self.send("Runtime.evaluate", expression=expression, awaitPromise=True,
                          returnByValue=True)  # fmt: skip
        if "exceptionDetails" in reply:
            raise AssertionError(f"the page's script failed: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def screenshot(self, path: Path) -> bytes:
        """The page as a PNG, also written to `path` (to look at when a test fails)."""
        png = base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])
        path.write_bytes(png)
        return png

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """The result of one DevTools command; its error as an AssertionError."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self._session is not None and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self._session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise AssertionError(f"{method} failed: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result
            self._events.append(reply)

    def _wait_for_event(self, method: str) -> None:
        while not any(event.get("method") == method for event in self._events):
            self._events.append(self._receive())

    def _receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT_SECONDS
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._replies], [], [], max(left, 0))
            if not ready:
                raise TimeoutError(f"Chromium said nothing for {WAIT_SECONDS:.0f} s")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise AssertionError("Chromium closed its DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        found: dict[str, Any] = json.loads(message)
        return found
