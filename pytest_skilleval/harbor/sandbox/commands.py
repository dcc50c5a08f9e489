"""One `exec`: start a command through the trial's keeper, wait with a timeout, kill its process group after.

Output goes to unnamed temp files, not pipes, so waiting never depends on background children closing a pipe.
The command's own process group dies when it ends (its `&` children with it, as before); what it detached
(`setsid`, a daemon such as a tmux server) lives on until the trial stops, when the keeper kills it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
from concurrent.futures import Future
from typing import Any

from harbor.environments.base import ExecResult

from pytest_skilleval.harbor.sandbox.keeper_client import ProcessKeeper, Spawned
from verifier import safe_io

TIMEOUT_EXIT_CODE = 124
MAX_STREAM_BYTES = 32 * 1024 * 1024


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


async def run_command(
    keeper: ProcessKeeper,
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout_sec: float | None,
    join_net: bool = False,
) -> ExecResult:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        spawned = keeper.spawn(argv, cwd, env, out.fileno(), err.fileno(), join_net=join_net)
        pid = await _started(spawned)
        exited = asyncio.wrap_future(spawned.exited)
        timed_out = False
        try:
            code = await asyncio.wait_for(asyncio.shield(exited), timeout=timeout_sec or None)
        except TimeoutError:
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
        kill_group(pid)  # its `&` children, still in its process group
        stdout, stderr = _read_capped(out), _read_capped(err)
    if timed_out:
        stderr += f"\nCommand timed out after {timeout_sec} seconds"
        return ExecResult(stdout=stdout, stderr=stderr, return_code=TIMEOUT_EXIT_CODE)
    return ExecResult(stdout=stdout, stderr=stderr, return_code=128 - code if code < 0 else code)
