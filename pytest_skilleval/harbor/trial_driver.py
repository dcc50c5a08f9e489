"""A trial process: runs the trials the pytest process hands it, each as the pytest process would, on its own loop.

Harbor's trial machinery (creating a trial, its hooks and bookkeeping) and our grading are most of the CPU a trial
costs the pytest process, all on one thread. With `--trial-processes N` the scheduler sends each trial's
`TrialSpec` to one of N of these processes (`trial_processes.py`) and gets its record back, so that work runs on
other cores while pytest reports. This side only runs trials: what starts one (the look-ahead, stop-on-pass, the
budget) stays in the pytest process.

The two sides speak one JSON object per line over a socket pair (`PROTOCOL` below). The process ignores Ctrl+C (it
runs in a session of its own; the pytest process decides what an interrupt stops) and, when its socket closes (the
run ends, or the pytest process died), cancels what it still runs through Harbor's own cancellation and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import socket
import sys
import traceback
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.results.triggering import TriggerRecord
from pytest_skilleval.skill.folder import SkillFolder
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings

# The messages, one JSON object a line:
#   pytest -> trial process: {"hello": {"run_dir", "run_id", "skills": [{"path", "settings"}]}} first, then
#     {"run": N, "spec": TrialSpec} and {"cancel": N}; closing the socket ends the process.
#   trial process -> pytest: {"done": N, "kind": "trial"|"trigger", "record": ..., "logs": [...], "written": {...}},
#     {"done": N, "error": TEXT, "trial_error": bool} or {"done": N, "cancelled": true}.
PROTOCOL = 1
LINE_LIMIT = 64 * 1024 * 1024  # one record a line; a record is kilobytes, its written verifier files at most this
CANCEL_GRACE_SECONDS = 30.0

Answer = dict[str, Any]


async def run_spec(runner: Any, spec: TrialSpec) -> TrialRecord | TriggerRecord:
    """One item's trial through `runner`: a trigger query's (harbor/trigger_trial.py) or a case's."""
    if spec.source == "trigger":
        from pytest_skilleval.harbor.trigger_trial import run_trigger_trial

        return await run_trigger_trial(runner, spec)
    record: TrialRecord = await runner.run_async(spec)
    return record


def hello(run_dir: Path, run_id: str, skills: dict[Path, RunSettings], pytest_outputs: tuple[Path, ...] = ()) -> Answer:
    """The first message: where this process stages and runs its trials, each skill's settings as merged and what
    the pytest session writes (left out of a skill's copy)."""
    return {
        "hello": {
            "protocol": PROTOCOL,
            "run_dir": str(run_dir),
            "run_id": run_id,
            "skills": [
                {"path": str(path), "settings": settings.model_dump(mode="json")} for path, settings in skills.items()
            ],
            "pytest_outputs": [str(path) for path in pytest_outputs],
        }
    }


def runner_from(greeting: Answer) -> Any:
    """The runner a `hello` describes: the pytest process's skills with their merged settings, not read again."""
    from pytest_skilleval.harbor.runner import SkillEvalRunner

    body = greeting["hello"]
    if body.get("protocol") != PROTOCOL:
        raise ValueError(f"trial process: protocol {body.get('protocol')!r}, expected {PROTOCOL}")
    skills = {}
    outputs = tuple(Path(path) for path in body.get("pytest_outputs", []))
    for skill in body["skills"]:
        folder = SkillFolder.with_settings(Path(skill["path"]), RunSettings.model_validate(skill["settings"]), outputs)
        skills[folder.path] = folder
    return SkillEvalRunner(Path(body["run_dir"]), skills, body["run_id"])


def answer_for(number: int, record: TrialRecord | TriggerRecord) -> Answer:
    """A finished trial's answer: its record, its Harbor warnings (held by trial name) and what the host verifier
    handed over in this process (so the pytest process writes the trial file without reading those files back)."""
    from pytest_skilleval.harbor.process_env import trial_log_lines

    trial_dir = record.trial_dir
    answer: Answer = {
        "done": number,
        "kind": "trigger" if isinstance(record, TriggerRecord) else "trial",
        "record": record.model_dump(mode="json"),
        "logs": trial_log_lines(Path(trial_dir).name) if trial_dir else [],
    }
    written = record.written if isinstance(record, TrialRecord) else None
    if written:
        answer["written"] = {name: dataclasses.asdict(file) for name, file in written.items()}
    return answer


def record_from(answer: Answer) -> TrialRecord | TriggerRecord:
    """The record an answer carries, as the trial process made it (what its verifier handed over included)."""
    from verifier.reward import WrittenFile

    if answer["kind"] == "trigger":
        return TriggerRecord.model_validate(answer["record"])
    record = TrialRecord.model_validate(answer["record"])
    written = answer.get("written")
    if written:
        record.keep_written({name: WrittenFile(**file) for name, file in written.items()})
    return record


async def _answer(number: int, run: Callable[[], Awaitable[TrialRecord | TriggerRecord]]) -> Answer:
    from pytest_skilleval.harbor.runner import TrialError

    try:
        return answer_for(number, await run())
    except asyncio.CancelledError:
        return {"done": number, "cancelled": True}
    except TrialError as error:
        return {"done": number, "error": str(error), "trial_error": True}
    except Exception as error:  # noqa: BLE001 - the pytest process reports it under the item, as if raised there
        text = "".join(traceback.format_exception(error)).rstrip()
        return {"done": number, "error": text, "trial_error": False}


class _Server:
    """The trials this process runs, by the number the pytest process gave each."""

    def __init__(self, runner: Any, writer: asyncio.StreamWriter) -> None:
        self.runner = runner
        self.writer = writer
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.sending = asyncio.Lock()

    async def send(self, message: Answer) -> None:
        async with self.sending:
            self.writer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
            with contextlib.suppress(ConnectionError):
                await self.writer.drain()

    def start(self, number: int, spec: TrialSpec) -> None:
        async def one() -> None:
            answer = await _answer(number, lambda: run_spec(self.runner, spec))
            self.tasks.pop(number, None)
            await self.send(answer)

        self.tasks[number] = asyncio.get_running_loop().create_task(one())

    def cancel(self, number: int) -> None:
        """Cancel a trial once: a repeated cancel (the pytest process asks again at its session end) would cancel the
        clean-up Harbor runs after the first (stopping the environment, recovering the agent's outputs)."""
        task = self.tasks.get(number)
        if task is not None and not task.cancelling():
            task.cancel()

    async def stop(self) -> None:
        """The socket closed: cancel what still runs and give its clean-up the grace period."""
        for number in list(self.tasks):
            self.cancel(number)
        left = [task for task in self.tasks.values() if not task.done()]
        if left:
            await asyncio.wait(left, timeout=CANCEL_GRACE_SECONDS)


async def serve(sock: socket.socket) -> None:
    """Read the pytest process's messages until its socket closes; each trial runs as a task of its own."""
    reader, writer = await asyncio.open_connection(sock=sock, limit=LINE_LIMIT)
    greeting = json.loads(await reader.readline())
    server = _Server(runner_from(greeting), writer)
    try:
        while line := await reader.readline():
            message = json.loads(line)
            if "run" in message:
                server.start(message["run"], TrialSpec.model_validate(message["spec"]))
            elif "cancel" in message:
                server.cancel(message["cancel"])
    finally:
        await server.stop()
        writer.close()


def main(argv: list[str]) -> int:
    """`python -m pytest_skilleval.harbor.trial_driver FD`: serve on the socket at file descriptor FD."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=int(argv[1]))
    from pytest_skilleval.harbor.process_env import prepare_process, quiet_harbor_deprecations

    prepare_process(hold_logs=True)  # as the pytest process does (plugin.pytest_configure)
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="harbor")
    from pytest_skilleval.harbor.nv_bridge import stop_bridges

    with warnings.catch_warnings():
        quiet_harbor_deprecations()
        try:
            asyncio.run(serve(sock))
        finally:
            stop_bridges()
    return 0


def exit_now(status: int) -> None:
    """End the process once its exit handlers ran (the keeper launcher's close among them), without the
    interpreter's teardown of every module and object a long run left (a multiprocessing child ends the same way):
    the pytest process waits for this exit before its own."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    exit_now(main(sys.argv))
