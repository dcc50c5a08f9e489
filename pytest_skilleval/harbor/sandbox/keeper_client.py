"""The host side of a trial's process keeper (see `keeper.py`): start it, spawn commands through it, stop it.

Keepers are forked by one launcher per host process (`keeper.py --launcher`), started on first use: a fork instead of
a new interpreter per trial. Each keeper still has its own socket to the host, so a trial's commands, exits and stop
never pass through the launcher.

Why threads and `concurrent.futures` rather than asyncio: one environment object lives through several event
loops (Harbor's trial runs in one, tests and hooks call `exec` from others); a reader thread and plain futures
work from any of them. The `_async` forms of start, end and stop await those futures on whichever loop runs them
instead of blocking a worker thread for the answer: beside the loop, a worker thread waits for the interpreter lock
after each of its system calls, and with a hundred trials in flight a pool of a few threads each held for a whole
sandbox start also held up the next trials' starts.
"""

from __future__ import annotations

import asyncio
import atexit
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
from typing import TypeVar

T = TypeVar("T")
KEEPER_SCRIPT = Path(__file__).with_name("keeper.py")
START_TIMEOUT = 90.0
STOP_TIMEOUT = 60.0
LAUNCH_TIMEOUT = 30.0  # a fork; the launcher's own start-up (an interpreter) is included the first time


class KeeperError(RuntimeError):
    """The trial's process keeper could not start, or a command could not be started through it."""


class SandboxEnded(KeeperError):
    """A command could not start because a command of the trial ended the sandbox itself (`kill -9 -1`)."""


@dataclass
class Spawned:
    """A command started through the keeper: its pid (a host pid, also its process group) and its exit code."""

    started: Future[int] = field(default_factory=Future)
    exited: Future[int] = field(default_factory=Future)


class LauncherGone(KeeperError):
    """The launcher died before answering a launch request."""


class _Launcher:
    """This process's keeper launcher: started on first use, again if it died, and ended when we exit (it also ends
    by itself when its socket to us closes, so even a SIGKILLed host leaves no launcher behind)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._owner = 0  # the pid that started it: a forked copy of this process starts its own

    def _start(self) -> socket.socket:
        host, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(KEEPER_SCRIPT), "--launcher", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            )
            host.settimeout(LAUNCH_TIMEOUT)
        except OSError as error:
            host.close()
            raise KeeperError(f"cannot start the trial's process keeper: {error}") from None
        finally:
            theirs.close()
        if self._owner == 0:
            atexit.register(self.close)
        self._sock, self._owner = host, os.getpid()
        return host

    def _usable(self) -> socket.socket:
        if self._sock is None or self._owner != os.getpid() or self._proc is None or self._proc.poll() is not None:
            if self._sock is not None and self._owner == os.getpid():
                self._sock.close()
            return self._start()
        return self._sock

    def launch(self, config: dict, keeper_end: socket.socket, log_fd: int) -> int:
        """A new keeper that talks to us over `keeper_end` and logs to `log_fd` (both stay ours to close): its pid.
        Raises LauncherGone when the launcher died before answering (the caller retries with a fresh socket)."""
        request = [json.dumps({"op": "launch", "config": config}).encode()]
        with self._lock:
            sock = self._usable()
            try:
                socket.send_fds(sock, request, [keeper_end.fileno(), log_fd])
                answer = json.loads(sock.recv(65536) or b"null")
            except (OSError, ValueError) as error:
                answer, why = None, str(error)
            else:
                why = "it ended"
            if not isinstance(answer, dict):
                sock.close()
                self._sock = None
                raise LauncherGone(f"the keeper launcher is gone ({why})")
        if not answer.get("launched"):
            raise KeeperError(answer.get("error") or "the keeper launcher could not start a keeper")
        return int(answer["launched"])

    def kill(self, pid: int) -> None:
        """SIGKILL a keeper that would not stop (the launcher kills only its own unreaped children)."""
        with self._lock:
            if self._sock is not None and self._owner == os.getpid():
                try:
                    self._sock.send(json.dumps({"op": "kill", "pid": pid}).encode())
                except OSError:
                    pass

    def close(self) -> None:
        with self._lock:
            sock, proc, self._sock, self._proc = self._sock, self._proc, None, None
            if sock is None or proc is None or self._owner != os.getpid():
                return
            sock.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


_LAUNCHER = _Launcher()


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
        self.pid: int | None = None  # the keeper's, once it said whether it is ready
        self._stopping = False
        self._gone: Future[None] = Future()  # set when the keeper's socket hangs up: it has exited
        self._lock = threading.Lock()
        self._next_id = 0
        self._pending: dict[int, Spawned] = {}
        self._ready: Future[dict] = Future()
        self._stopped: Future[dict] = Future()
        self._ended: Future[dict] | None = None  # the answer to the `end` request under way
        self._reader: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self.pid is not None and not self._gone.done() and not self._stopped.done()

    def wait_gone(self, timeout: float) -> bool:
        """Whether the keeper process has ended (its socket hung up) within `timeout` seconds."""
        try:
            self._gone.result(timeout=timeout)
        except TimeoutError:
            return False
        return True

    def start(self) -> None:
        """Blocking: start the keeper (and its sandbox) and wait until it can run commands."""
        self._open()
        try:
            reply = self._ready.result(timeout=START_TIMEOUT)
        except TimeoutError:
            reply = None
        problem = self._start_problem(reply)
        if problem is not None:
            self.stop()
            raise KeeperError(problem)

    async def start_async(self) -> None:
        """`start` on the running event loop: the keeper forked (a round trip to the launcher), its sandbox's
        readiness awaited rather than waited for in a thread."""
        self._open()
        try:
            reply = await _answer(self._ready, START_TIMEOUT)
        except TimeoutError:
            reply = None
        problem = self._start_problem(reply)
        if problem is not None:
            await self.stop_async()
            raise KeeperError(problem)

    def _open(self) -> None:
        """Fork the keeper and start reading its messages (the sandbox says when it is ready)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            host = self._launch()
        except LauncherGone:
            host = self._launch()  # the launcher had died since the last trial: the next one is fresh
        self._sock = host
        # The reader holds the keeper only weakly: an environment dropped without stop() (a test, a crash) closes
        # the socket when collected, and the keeper then ends everything the trial started.
        self._reader = threading.Thread(
            target=_read_replies, args=(host, weakref.ref(self)), name="skilleval-keeper", daemon=True
        )
        self._reader.start()
        weakref.finalize(self, _hang_up, host)

    def _start_problem(self, reply: dict | None) -> str | None:
        """Why the keeper's sandbox did not start (`reply` None: no answer in time); None when it is ready."""
        if reply is None:
            return f"the trial's sandbox did not start within {START_TIMEOUT:.0f} s"
        if not reply.get("ready"):
            return f"the trial's sandbox could not start: {reply.get('error') or self._log_tail()}"
        return None

    def _launch(self) -> socket.socket:
        """A keeper forked for this trial; returns our end of its socket."""
        host, mine = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        config = {"bwrap": self.bwrap_options, "cwd": str(self.log_path.parent)}
        try:
            log = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as error:
            host.close()
            mine.close()
            raise KeeperError(f"cannot open the keeper's log {self.log_path}: {error}") from None
        try:
            self.pid = _LAUNCHER.launch(config, mine, log)
        except KeeperError:
            host.close()
            raise
        finally:
            mine.close()
            os.close(log)
        return host

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
        elif "ended" in message:
            ended = self._ended
            if ended is not None and not ended.done():
                ended.set_result(message)
        elif "id" in message:
            self._dispatch(message)

    def _on_hang_up(self) -> None:
        self._gone.set_result(None)
        gone = KeeperError(f"the trial's process keeper ended ({self._log_tail()})")
        for future in (self._ready, self._stopped):
            if not future.done():
                future.set_exception(gone)
        with self._lock:
            pending, self._pending = self._pending, {}
        if self._ended is not None and not self._ended.done():
            self._ended.set_exception(gone)
        for spawned in pending.values():
            for outcome in (spawned.started, spawned.exited):
                if not outcome.done():
                    outcome.set_exception(gone)

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
            kind = SandboxEnded if message.get("sandbox_ended") else KeeperError
            spawned.started.set_exception(kind(message["error"]))
            spawned.exited.set_exception(kind(message["error"]))
        else:
            spawned.exited.set_result(int(message["status"]))

    def spawn(
        self, argv: list[str], cwd: str, env: dict[str, str], stdout: int, stderr: int, join_net: bool = False
    ) -> Spawned:
        """Start a command (cwd is a sandbox path in bwrap mode, a host path otherwise); returns at once."""
        if not self.running or self._sock is None:
            if self._gone.done() and not self._stopping:  # it ended without being asked to
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
                    socket.send_fds(
                        self._sock, [json.dumps({"op": "spawn", "id": request_id}).encode()], [body, stdout, stderr]
                    )
                except OSError as error:
                    del self._pending[request_id]
                    raise KeeperError(f"the trial's process keeper is gone: {error}") from None
        finally:
            os.close(body)
        return spawned

    def end_commands(self) -> list[int]:
        """Blocking: kill every process the trial's commands started, detached ones included, and keep the sandbox
        (the grader runs in it next); returns pids the keeper could not kill (normally none)."""
        ended = self._ask_end()
        try:
            return list(ended.result(timeout=STOP_TIMEOUT).get("left", []))
        except TimeoutError:
            raise KeeperError(_NOT_ENDED) from None

    async def end_commands_async(self) -> list[int]:
        """`end_commands`, its answer awaited on the running event loop."""
        ended = self._ask_end()
        try:
            return list((await _answer(ended, STOP_TIMEOUT)).get("left", []))
        except TimeoutError:
            raise KeeperError(_NOT_ENDED) from None

    def _ask_end(self) -> Future[dict]:
        if not self.running or self._sock is None:
            raise KeeperError("the environment is not started (or already stopped)")
        ended: Future[dict] = Future()
        with self._lock:
            self._ended = ended
            try:
                self._sock.send(json.dumps({"op": "end"}).encode())
            except OSError as error:
                raise KeeperError(f"the trial's process keeper is gone: {error}") from None
        return ended

    def stop(self, remove: Path | None = None) -> list[int]:
        """Blocking: kill everything the trial started, then delete `remove` (the sandbox folder) there; returns pids
        the keeper could not kill (normally none). The folder may still be there when the keeper could not do it."""
        left: list[int] = []
        if self._ask_stop(remove):
            try:
                left = list(self._stopped.result(timeout=STOP_TIMEOUT).get("left", []))
            except (TimeoutError, KeeperError):
                pass
        if self.pid is not None and not self.wait_gone(STOP_TIMEOUT):
            _LAUNCHER.kill(self.pid)
            self.wait_gone(5)
        if self._sock is not None:
            self._sock.close()
        return left

    async def stop_async(self, remove: Path | None = None) -> list[int]:
        """`stop`, its answers awaited on the running event loop."""
        left: list[int] = []
        if self._ask_stop(remove):
            try:
                left = list((await _answer(self._stopped, STOP_TIMEOUT)).get("left", []))
            except (TimeoutError, KeeperError):
                pass
        if self.pid is not None and not await _settled(self._gone, STOP_TIMEOUT):
            _LAUNCHER.kill(self.pid)
            await _settled(self._gone, 5)
        if self._sock is not None:
            self._sock.close()
        return left

    def _ask_stop(self, remove: Path | None) -> bool:
        """Ask a running keeper to stop (and delete `remove`); True when asked. From here on its end is expected."""
        running, self._stopping = self.running, True
        if self._sock is None or not running:
            return False
        ask = {"op": "stop", "remove": str(remove)} if remove is not None else {"op": "stop"}
        try:
            with self._lock:
                self._sock.send(json.dumps(ask).encode())
        except OSError:
            return False
        return True


_NOT_ENDED = f"the trial's processes were not ended within {STOP_TIMEOUT:.0f} s"


async def _answer(future: Future[T], timeout: float) -> T:
    """A keeper's answer awaited on the running loop (TimeoutError past `timeout`). The future itself is never
    cancelled, even when the waiting task is: the reader thread sets it whatever happens."""
    return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), timeout)


async def _settled(future: Future[T], timeout: float) -> bool:
    """Whether `future` got its result or exception within `timeout` seconds."""
    try:
        await _answer(future, timeout)
    except TimeoutError:
        return False
    except Exception:  # noqa: BLE001 - settled, with an error
        return True
    return True
