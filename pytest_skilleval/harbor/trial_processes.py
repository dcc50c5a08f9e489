"""`--trial-processes N`: the scheduler's trials run in N child processes (`trial_driver.py`), records come back.

The scheduler keeps deciding what runs (look-ahead, --n-concurrent, stop-on-pass, the budget); `TrialProcesses.run`
takes the place of running a trial on its loop: the spec goes to the child with the fewest trials in flight and its
answer comes back as the same record, Harbor warnings and verifier hand-over a trial run here would have given.

Each child stages under a scratch folder of its own (a sibling of the runner's, `skilleval<N>`, so a trial folder
keeps the shape `runner.own_trial_dir` accepts), runs in a session of its own (the terminal's Ctrl+C reaches only
pytest, which cancels what it started: a cancelled trial is cancelled in its child, and the child's answer awaited
within the grace period), and ends when its socket closes. A child that dies fails its trials in flight with its
exit status and the last lines it printed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from pytest_skilleval.harbor.process_env import hand_over_trial_logs
from pytest_skilleval.harbor.trial_driver import CANCEL_GRACE_SECONDS, LINE_LIMIT, Answer, hello, record_from
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.results.triggering import TriggerRecord
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings
from verifier.redact import Redactor

STDERR_LINES = 20  # a dead child's last lines, for its trials' error
# A `cancel` is a few bytes: a child that takes longer to take it is not reading (stopped, or stuck), and the run's
# end does not wait on it. A trial's spec waits as long as it takes: a busy child on a loaded machine reads late.
CANCEL_SEND_SECONDS = 5.0
EXIT_SECONDS = 5.0  # a closed child's own exit, beyond the grace its cancelled trials had


def sibling_run_dir(run_dir: Path) -> Path:
    """A new scratch folder beside `run_dir`, named as pytest's `mktemp("skilleval")` names them."""
    for number in itertools.count():
        candidate = run_dir.parent / f"skilleval{number}"
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise AssertionError("unreachable")


class TrialProcessError(Exception):
    """A trial process failed to answer (it died, or could not start)."""


class _Child:
    """One trial process: its socket, its trials in flight by number, the last lines it printed."""

    def __init__(self, index: int, process: subprocess.Popen[bytes], sock: socket.socket, redactor: Redactor) -> None:
        self.index = index
        self.redactor = redactor  # what it printed is shown only redacted
        self.process = process
        self.sock = sock
        self.waiting: dict[int, asyncio.Future[Answer]] = {}
        self.cancelled: set[int] = set()  # trials whose `cancel` was sent (once is enough: the child cancels once)
        self.stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self.writer: asyncio.StreamWriter | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.closed = False  # its socket closed: it runs nothing more
        self.gone: TrialProcessError | None = None  # why, once its exit status is known

    async def connect(self, greeting: Answer) -> None:
        reader, self.writer = await asyncio.open_connection(sock=self.sock, limit=LINE_LIMIT)
        loop = asyncio.get_running_loop()
        errors = asyncio.StreamReader(limit=LINE_LIMIT)
        assert self.process.stderr is not None
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(errors), self.process.stderr)
        self.tasks = [loop.create_task(self._read(reader)), loop.create_task(self._read_stderr(errors))]
        await self.send(greeting)

    async def send(self, message: Answer, timeout: float | None = None) -> None:
        """One message; a child that does not take it within `timeout` is treated as gone (ConnectionError)."""
        assert self.writer is not None
        self.writer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        try:
            await asyncio.wait_for(self.writer.drain(), timeout)
        except TimeoutError:
            raise ConnectionError(f"trial process {self.index} stopped reading its messages") from None

    async def cancel(self, number: int) -> None:
        """Ask the child to cancel this trial, once."""
        if number in self.cancelled:
            return
        self.cancelled.add(number)
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.send({"cancel": number}, CANCEL_SEND_SECONDS)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                answer = json.loads(line)
                future = self.waiting.pop(answer["done"], None)
                if future is not None and not future.done():
                    future.set_result(answer)
        except (ConnectionError, ValueError) as error:
            self.stderr.append(f"(reading its answers: {error})")
        finally:
            if not self.closed:  # closed by `close`: nothing waits any more
                await self._died()

    async def _read_stderr(self, errors: asyncio.StreamReader) -> None:
        with contextlib.suppress(ConnectionError, ValueError):
            while line := await errors.readline():
                self.stderr.append(line.decode(errors="replace").rstrip())

    async def _died(self) -> None:
        """The socket closed: whatever still waits on this child gets its exit status and last lines, and so does
        any trial that would have gone to it later."""
        self.closed = True
        with contextlib.suppress(subprocess.TimeoutExpired):
            await asyncio.to_thread(self.process.wait, 5)
        tail = self.redactor.text("\n".join(self.stderr)) if self.stderr else ""
        error = self.gone = TrialProcessError(
            f"trial process {self.index} (pid {self.process.pid}) exited with status {self.process.returncode}"
            + (f"; its last lines:\n{tail}" if tail else "")
        )
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(error)
        self.waiting.clear()


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one, else every core)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class TrialProcesses:
    """N trial processes started on first use, on the loop that runs the scheduler."""

    def __init__(
        self,
        count: int,
        run_dir: Path,
        run_id: str,
        skills: dict[Path, RunSettings],
        pytest_outputs: tuple[Path, ...] = (),
    ) -> None:
        self.count = min(count, usable_cores())  # more than one a core gains nothing
        self.run_dir = run_dir
        self.run_id = run_id
        self.skills = skills
        self.pytest_outputs = pytest_outputs  # what pytest writes, left out of each skill's copy (skill/skill_copy.py)
        self._children: list[_Child] = []
        self._starting: asyncio.Task[list[_Child]] | None = None
        self._numbers = itertools.count(1)
        self._grace_spent = False  # a child left a cancelled trial unanswered through the grace period

    def _spawn(self, index: int) -> _Child:
        ours, theirs = socket.socketpair()
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "pytest_skilleval.harbor.trial_driver", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,  # the terminal's Ctrl+C reaches pytest only, which stops what it started
                env=os.environ.copy(),
            )
        finally:
            theirs.close()
        ours.setblocking(False)
        return _Child(index, process, ours, self._redactor())

    def _redactor(self) -> Redactor:
        kwargs = [settings.env_kwargs for settings in self.skills.values()]
        kwargs += [agent for settings in self.skills.values() for agent in settings.agent_kwargs.values()]
        return Redactor.from_environment(os.environ, kwargs)

    async def _start(self) -> list[_Child]:
        children = []
        for index in range(self.count):
            child = self._spawn(index)
            await child.connect(hello(sibling_run_dir(self.run_dir), self.run_id, self.skills, self.pytest_outputs))
            children.append(child)
        return children

    async def _ready(self) -> list[_Child]:
        if self._starting is None:
            self._starting = asyncio.get_running_loop().create_task(self._start())
        self._children = await asyncio.shield(self._starting)
        return self._children

    async def run(self, spec: TrialSpec) -> TrialRecord | TriggerRecord:
        """The trial run in the child with the fewest in flight; its record, or the error the child reported."""
        from pytest_skilleval.harbor.runner import TrialError

        children = await self._ready()
        live = [candidate for candidate in children if not candidate.closed]
        if not live:
            raise TrialError(f"no trial process is left: {children[-1].gone or 'they are exiting'}")
        child = min(live, key=lambda candidate: len(candidate.waiting))
        number = next(self._numbers)
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        child.waiting[number] = future
        try:
            await child.send({"run": number, "spec": spec.model_dump(mode="json")})
            answer = await asyncio.shield(future)
        except asyncio.CancelledError:
            await self._cancel(child, number, future)
            raise
        except (ConnectionError, TrialProcessError) as error:
            child.waiting.pop(number, None)
            raise TrialError(str(error)) from None
        if "error" in answer:
            raise TrialError(answer["error"])
        if answer.get("cancelled"):  # the child was stopping: the run is ending
            raise asyncio.CancelledError
        record = record_from(answer)
        if record.trial_dir and answer.get("logs"):
            hand_over_trial_logs(Path(record.trial_dir).name, answer["logs"])
        return record

    async def _cancel(self, child: _Child, number: int, future: asyncio.Future[Answer]) -> None:
        """Cancelled here (Ctrl+C, -x, a timeout): cancelled in the child, whose clean-up is awaited in the grace."""
        if future.done():
            return
        await child.cancel(number)
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, TrialProcessError, ConnectionError):
            await asyncio.wait_for(asyncio.shield(future), CANCEL_GRACE_SECONDS)  # still awaited by `close`
        child.waiting.pop(number, None)

    async def close(self) -> None:
        """Stop every child: its socket closed, so it cancels what it still runs and exits; `reap` awaits that
        exit, so the results are written meanwhile."""
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        # What is still awaited was cancelled (the scheduler delivered the rest): cancelled in the child now (unless
        # its own cancellation already asked), its answer awaited in the grace period, before the sockets close.
        waiting = [(child, number) for child in self._children for number in child.waiting]
        for child, number in waiting:
            await child.cancel(number)
        answers = [future for child in self._children for future in child.waiting.values()]
        if answers:
            await asyncio.wait(answers, timeout=CANCEL_GRACE_SECONDS)
            self._grace_spent = any(not answer.done() or answer.cancelled() for answer in answers)
        for child in self._children:
            child.closed = True
            for future in child.waiting.values():
                if not future.done():
                    future.set_exception(TrialProcessError(f"trial process {child.index} was stopped"))
            child.waiting.clear()
            if child.writer is not None:
                child.writer.close()
            for task in child.tasks:
                task.cancel()
            await asyncio.gather(*child.tasks, return_exceptions=True)

    def reap(self) -> None:
        """Wait for every child closed by `close` to exit; one still running after the grace period is killed (at
        once, nearly, when `close` already waited the grace out: one grace period in all, not one per step)."""
        deadline = time.monotonic() + EXIT_SECONDS + (0.0 if self._grace_spent else CANCEL_GRACE_SECONDS)
        for child in self._children:
            try:
                child.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait()
        self._children = []
