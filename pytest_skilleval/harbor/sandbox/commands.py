"""One `exec`: start a command through the trial's keeper, wait with a timeout, kill its process group after.

Output goes to anonymous in-memory files (memfd), not pipes, so waiting never depends on background children
closing a pipe. The command's own process group dies when it ends (its `&` children with it, as before); what it detached
(`setsid`, a daemon such as a tmux server) lives on until the trial stops, when the keeper kills it.

Output is capped while the command runs (docs/security.md, "Output caps"): past 16 MiB of stdout and stderr
together the command's process group is killed and the exec raises OutputCapExceeded, which fails the trial
rather than hand back part of the output; all commands of a trial together may hand the pytest process at most
64 MiB, so no trial grows its memory without bound. One watcher thread per process checks the output of every
running command every 50 ms, so the event loop wakes only when a command ends or times out, not 20 times a second
for each command in flight. A command whose output the watcher cannot check is ended, logged and its exec fails
(the cap is never silently off), and the watcher goes on with the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import IO, Any

from harbor.environments.base import ExecResult

from pytest_skilleval.harbor.sandbox.keeper_client import ProcessKeeper, Spawned
from verifier import safe_io

TIMEOUT_EXIT_CODE = 124
MAX_COMMAND_OUTPUT_BYTES = 16 * 1024 * 1024  # one command: stdout and stderr together
MAX_TRIAL_OUTPUT_BYTES = 64 * 1024 * 1024  # every command of one trial: what reaches the pytest process
MAX_STREAM_BYTES = MAX_COMMAND_OUTPUT_BYTES  # never read more of one stream than one command may write
POLL_SECONDS = 0.05
_log = logging.getLogger(__name__)


class OutputCapExceeded(RuntimeError):
    """A command wrote more than a cap allows (or its output could not be checked against it); it was ended, and its
    trial fails."""


@dataclass
class OutputBudget:
    """What the commands of one trial have handed to the pytest process so far, against the trial's cap."""

    limit: int = MAX_TRIAL_OUTPUT_BYTES
    used: int = 0


def _written(*handles: Any) -> int:
    return _size(handle.fileno() for handle in handles)


def _size(fds: Iterable[int]) -> int:
    """What a command has written so far to its output files (by descriptor)."""
    return sum(os.fstat(fd).st_size for fd in fds)


@dataclass(eq=False)
class _Watched:
    """A running command's process group and output files, and whether the watcher ended it for its output (past
    the cap, or `unchecked`: why its output could not be checked)."""

    pid: int
    fds: tuple[int, int]
    over_cap: bool = False
    unchecked: str | None = None


class _OutputWatch:
    """Every POLL_SECONDS, kills the process group of each watched command past MAX_COMMAND_OUTPUT_BYTES.

    The check runs under the lock that `forget` takes, so once `forget` returns the thread never touches that
    command's descriptors (which the caller then closes and the process may reuse).
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._watched: set[_Watched] = set()
        self._owner = 0  # the pid that started the thread: a forked copy of this process starts its own

    def watch(self, pid: int, out: Any, err: Any) -> _Watched:
        watched = _Watched(pid, (out.fileno(), err.fileno()))
        with self._changed:
            if self._owner != os.getpid():
                self._owner, self._watched = os.getpid(), set()
                threading.Thread(target=self._run, name="skilleval-output-cap", daemon=True).start()
            self._watched.add(watched)
            self._changed.notify()
        return watched

    def forget(self, watched: _Watched) -> None:
        with self._changed:
            self._watched.discard(watched)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._watched:
                    self._changed.wait()
                for watched in self._watched:
                    if watched.unchecked is not None:
                        _end(watched)  # every round: the command's pid is known before its setsid makes the group
                    elif not watched.over_cap:
                        _check(watched)
            time.sleep(POLL_SECONDS)


def _check(watched: _Watched) -> None:
    """End the command past the cap. An error in the check (a bug: its files stay open while it is watched) ends that
    command and is logged, where it used to end the watcher thread: every command after it ran uncapped, unsaid."""
    try:
        if _size(watched.fds) > MAX_COMMAND_OUTPUT_BYTES:
            watched.over_cap = True
            kill_group(watched.pid)
    except Exception as error:  # noqa: BLE001 - reported by the command's exec; the watcher goes on with the others
        watched.unchecked = f"{type(error).__name__}: {error}"
        _log.error(
            "the output cap of command %d could not be checked (%s): it is ended", watched.pid, watched.unchecked
        )
        _end(watched)


def _end(watched: _Watched) -> None:
    """Kill the command's process group; never raises (the watcher thread must go on)."""
    with contextlib.suppress(OSError):
        kill_group(watched.pid)


_WATCH = _OutputWatch()


def _command_shown(argv: list[str]) -> str:
    text = " ".join(argv[2:] if argv[:2] in (["/bin/bash", "-c"], ["bash", "-c"]) else argv)
    return text if len(text) <= 120 else text[:117] + "..."


def over_command_cap(written: int, argv: list[str]) -> str:
    """The error of a command past the per-command cap (every environment says it the same way)."""
    return (
        f"a command wrote more than the {MAX_COMMAND_OUTPUT_BYTES}-byte (16 MiB) cap on one command's stdout and "
        f"stderr together ({written} bytes before it was ended): its processes were killed and the trial fails "
        f"rather than keep part of its output; command: {_command_shown(argv)}"
    )


def unchecked_cap(why: str, argv: list[str]) -> str:
    """The error of a command whose output the watcher could not check against the per-command cap."""
    return (
        f"a command's output could not be checked against the {MAX_COMMAND_OUTPUT_BYTES}-byte (16 MiB) cap while it "
        f"ran ({why}): its processes were killed and the trial fails rather than run a command uncapped; command: "
        f"{_command_shown(argv)}"
    )


def over_trial_cap(budget: OutputBudget, written: int, argv: list[str]) -> str:
    """The error of a trial whose commands together passed the per-trial cap."""
    return (
        f"the trial's commands wrote more than the {budget.limit}-byte (64 MiB) cap on all of one trial's command "
        f"output ({budget.used} bytes before this command's {written}): the trial fails rather than grow the pytest "
        f"process; command: {_command_shown(argv)}"
    )


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_capped(handle: Any) -> str:
    """Kept up to MAX_STREAM_BYTES, with a last line saying where it was cut (verifier.safe_io)."""
    return safe_io.read_capped(handle, MAX_STREAM_BYTES)


async def _started(spawned: Spawned) -> int:
    """The pid; if we are cancelled before it is known, the command is killed as soon as it starts."""
    try:
        return await asyncio.shield(asyncio.wrap_future(spawned.started))
    except asyncio.CancelledError:

        def kill_once_started(started: Future[int]) -> None:
            if started.exception() is None:
                kill_group(started.result())

        spawned.started.add_done_callback(kill_once_started)
        raise


def _output_file(stream: str) -> IO[bytes]:
    """Where a command's stdout or stderr goes: an anonymous file in memory (memfd), not one in the temp folder.

    Why: each command's two temp files were new inodes on the temp folder's file system, and on ext4 picking a free
    inode (it checks the inode was not freed recently) was about 2.5% of the pytest process's CPU at 100 trials in
    flight. Memory is the same as before: a deleted temp file's pages stay in the page cache (never written back),
    and past MAX_COMMAND_OUTPUT_BYTES the watcher ends the command either way."""
    return os.fdopen(os.memfd_create(f"skilleval-{stream}", os.MFD_CLOEXEC), "w+b")


async def run_command(
    keeper: ProcessKeeper,
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout_sec: float | None,
    join_net: bool = False,
    budget: OutputBudget | None = None,
) -> ExecResult:
    with _output_file("stdout") as out, _output_file("stderr") as err:
        spawned = keeper.spawn(argv, cwd, env, out.fileno(), err.fileno(), join_net=join_net)
        pid = await _started(spawned)
        exited = asyncio.wrap_future(spawned.exited)
        watched = _WATCH.watch(pid, out, err)
        timed_out = False
        try:
            await asyncio.wait({exited}, timeout=timeout_sec or None)
            if not exited.done():
                timed_out = True
                kill_group(pid)
            code = await exited
        except BaseException:
            kill_group(pid)
            try:
                await asyncio.wait_for(asyncio.shield(exited), timeout=5)
            except BaseException:  # noqa: BLE001 - the error that stopped the command is raised below
                pass
            raise
        finally:
            _WATCH.forget(watched)
        over_cap, unchecked = watched.over_cap, watched.unchecked
        kill_group(pid)  # its `&` children, still in its process group
        written = _written(out, err)
        if over_cap or written > MAX_COMMAND_OUTPUT_BYTES:
            raise OutputCapExceeded(over_command_cap(written, argv))
        if unchecked is not None:
            raise OutputCapExceeded(unchecked_cap(unchecked, argv))
        if budget is not None:
            if budget.used + written > budget.limit:
                raise OutputCapExceeded(over_trial_cap(budget, written, argv))
            budget.used += written
        stdout, stderr = _read_capped(out), _read_capped(err)
    if timed_out:
        stderr += f"\nCommand timed out after {timeout_sec} seconds"
        return ExecResult(stdout=stdout, stderr=stderr, return_code=TIMEOUT_EXIT_CODE)
    return ExecResult(stdout=stdout, stderr=stderr, return_code=128 - code if code < 0 else code)
