"""A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe`: no websocket, no extra package.

Chromium reads NUL-terminated JSON commands on fd 3 and writes responses and events on fd 4. That is enough to
load a page, run a script in it, collect console errors (uncaught exceptions, console.error, and browser log entries
such as a blocked fetch or a CSP violation) and take a full-page screenshot.
"""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any


class CDPError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page, driven over the debugging pipe."""

    def __init__(self, chromium: str, profile: Path, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.errors: list[str] = []
        self._events: list[dict[str, Any]] = []
        self._next_id = 0
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()

        def wire() -> None:  # the child's fd 3 reads our commands, its fd 4 writes to us
            read_end, write_end = os.dup(cmd_r), os.dup(out_w)  # out of the way of 3 and 4 first
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        no_sandbox = ["--no-sandbox"] if os.geteuid() == 0 else []
        self.process = subprocess.Popen(
            [
                chromium,
                "--headless",
                *no_sandbox,
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,
            pass_fds=(3, 4),  # kept open after wire() (fds are closed after it runs)
        )
        os.close(cmd_r)
        os.close(out_w)
        self._buffer = b""
        try:
            target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable", session=True)
        except BaseException:
            self.close()  # never leave a Chromium behind
            raise

    # ------------------------------------------------------------------------------------------ wire

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._out_r], [], [], remaining)[0]:
                raise CDPError("timed out waiting for Chromium")
            chunk = os.read(self._out_r, 65536)
            if not chunk:
                raise CDPError("Chromium closed the debugging pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def _note(self, message: dict[str, Any]) -> None:
        method, params = message.get("method", ""), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(
                "console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in params.get("args", []))
            )
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.errors.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}".strip())
        self._events.append(message)

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._note(reply)

    def wait_for(self, method: str) -> None:
        deadline = time.monotonic() + self.timeout
        if any(event.get("method") == method for event in self._events):
            return
        while True:
            message = self._read_message(deadline)
            self._note(message)
            if message.get("method") == method:
                return

    # ----------------------------------------------------------------------------------------- page

    def open(self, url: str) -> None:
        self._events.clear()
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            raise CDPError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, width: int = 1280) -> None:
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=True)
        path.write_bytes(base64.b64decode(data["data"]))

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (CDPError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._cmd_w, self._out_r):
            try:
                os.close(fd)
            except OSError:
                pass
