"""The host side of a trial's process keeper (see `keeper.py`): start it, spawn commands through it, stop it.

Why threads and `concurrent.futures` rather than asyncio: one environment object lives through several event
loops (Harbor's trial runs in one, tests and hooks call `exec` from others); a reader thread and plain futures
work from any of them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import weakref
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

KEEPER_SCRIPT = Path(__file__).with_name("keeper.py")
START_TIMEOUT = 90.0
STOP_TIMEOUT = 60.0


class KeeperError(RuntimeError):
    """The trial's process keeper could not start, or a command could not be started through it."""


@dataclass
class Spawned:
    """A command started through the keeper: its pid (a host pid, also its process group) and its exit code."""

    started: Future[int] = field(default_factory=Future)
    exited: Future[int] = field(default_factory=Future)


def _hang_up(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _read_replies(sock: socket.socket, owner: weakref.ref[ProcessKeeper]) -> None:
    """The reader thread: hands each keeper message to its owner until the socket closes."""
    while True:
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        keeper = owner()
        if keeper is None:
            return
        if not data:
            keeper._on_hang_up()
            return
        keeper._on_message(json.loads(data))
        del keeper


class ProcessKeeper:
    """One trial's keeper process. `bwrap_options` set: commands run inside that sandbox; None: on the host."""

    def __init__(self, bwrap_options: list[str] | None, log_path: Path) -> None:
        self.bwrap_options = bwrap_options
        self.log_path = log_path
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._next_id = 0
        self._pending: dict[int, Spawned] = {}
        self._ready: Future[dict] = Future()
        self._stopped: Future[dict] = Future()
        self._reader: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and not self._stopped.done()

    def start(self) -> None:
        """Blocking: start the keeper (and its sandbox) and wait until it can run commands."""
        host, mine = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        config = json.dumps({"bwrap": self.bwrap_options})
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(KEEPER_SCRIPT), config, str(mine.fileno())],
                pass_fds=(mine.fileno(),), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                cwd=str(self.log_path.parent), env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            )
        mine.close()
        self._sock = host
        # The reader holds the keeper only weakly: an environment dropped without stop() (a test, a crash) closes
        # the socket when collected, and the keeper then ends everything the trial started.
        self._reader = threading.Thread(target=_read_replies, args=(host, weakref.ref(self)), name="skilleval-keeper",
                                        daemon=True)
        self._reader.start()
        weakref.finalize(self, _hang_up, host)
        try:
            reply = self._ready.result(timeout=START_TIMEOUT)
        except TimeoutError:
            self.stop()
            raise KeeperError(f"the trial's sandbox did not start within {START_TIMEOUT:.0f} s") from None
        if not reply.get("ready"):
            self.stop()
            raise KeeperError(f"the trial's sandbox could not start: {reply.get('error') or self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except OSError:
            return "no details"
        return lines[-1] if lines else "the keeper exited without a word"

    def _on_message(self, message: dict) -> None:
        if "ready" in message:
            self._ready.set_result(message)
        elif "stopped" in message:
            self._stopped.set_result(message)
        elif "id" in message:
            self._dispatch(message)

    def _on_hang_up(self) -> None:
        gone = KeeperError(f"the trial's process keeper ended ({self._log_tail()})")
        for future in (self._ready, self._stopped):
            if not future.done():
                future.set_exception(gone)
        with self._lock:
            pending, self._pending = self._pending, {}
        for spawned in pending.values():
            for future in (spawned.started, spawned.exited):
                if not future.done():
                    future.set_exception(gone)

    def _dispatch(self, message: dict) -> None:
        with self._lock:
            spawned = self._pending.get(message["id"])
            if spawned is None:
                return
            if "status" in message or "error" in message:
                del self._pending[message["id"]]
        if "pid" in message:
            spawned.started.set_result(int(message["pid"]))
        elif "error" in message:
            spawned.started.set_exception(KeeperError(message["error"]))
            spawned.exited.set_exception(KeeperError(message["error"]))
        else:
            spawned.exited.set_result(int(message["status"]))

    def spawn(self, argv: list[str], cwd: str, env: dict[str, str], stdout: int, stderr: int,
              join_net: bool = False) -> Spawned:
        """Start a command (cwd is a sandbox path in bwrap mode, a host path otherwise); returns at once."""
        if not self.running or self._sock is None:
            # Ended on its own: no stop reply yet, or the reader already saw the socket hang up (a race either way).
            hung_up = self._stopped.done() and self._stopped.exception() is not None
            if self._proc is not None and self._proc.poll() is not None and (not self._stopped.done() or hung_up):
                raise KeeperError(f"the trial's process keeper ended unexpectedly ({self._log_tail()})")
            raise KeeperError("the environment is not started (or already stopped)")
        spawned = Spawned()
        # In memory, never a file: the request carries the command's environment (which may hold keys).
        body = os.memfd_create("skilleval-request", os.MFD_CLOEXEC)
        try:
            with os.fdopen(body, "wb", closefd=False) as handle:
                handle.write(json.dumps({"argv": argv, "cwd": cwd, "env": env, "join_net": join_net}).encode())
            os.lseek(body, 0, os.SEEK_SET)
            with self._lock:
                self._next_id += 1
                request_id = self._next_id
                self._pending[request_id] = spawned
                try:
                    socket.send_fds(self._sock, [json.dumps({"op": "spawn", "id": request_id}).encode()],
                                    [body, stdout, stderr])
                except OSError as error:
                    del self._pending[request_id]
                    raise KeeperError(f"the trial's process keeper is gone: {error}") from None
        finally:
            os.close(body)
        return spawned

    def stop(self) -> list[int]:
        """Blocking: kill everything the trial started; returns pids the keeper could not kill (normally none)."""
        left: list[int] = []
        if self._sock is not None and self._proc is not None and self._proc.poll() is None:
            try:
                with self._lock:
                    self._sock.send(json.dumps({"op": "stop"}).encode())
                left = list(self._stopped.result(timeout=STOP_TIMEOUT).get("left", []))
            except (OSError, TimeoutError, KeeperError):
                pass
        if self._proc is not None:
            try:
                self._proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._sock is not None:
            self._sock.close()
        return left
