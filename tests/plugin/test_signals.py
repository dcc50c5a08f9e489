"""Signals end a run like one Ctrl+C (issue 9, item 7): a second Ctrl+C during shutdown, or SIGTERM mid-trial,
leaves `result.json` marked interrupted, `latest` on the previous run, that run intact, and no process behind."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import SkillProject, simple_entries, start_interruptible


def _unique_sleep() -> str:
    """A sleep length no other process on the machine has in its command line (not even this test's other
    parameters, which xdist runs at the same time), to count what the trial left behind."""
    return f"171.{random.randrange(10**8, 10**9)}"


def _skill(project: SkillProject, sleep: str) -> Path:
    skill = project.make_skill("demo", simple_entries("quick", "slow"))
    for case, command in (("quick", "echo quick"), ("slow", f"sleep {sleep}; echo done")):
        path = skill / "evals" / "replays" / f"{case}.json"
        replay = json.loads(path.read_text())
        replay["steps"][1]["tool_calls"][0]["arguments"]["command"] = command
        path.write_text(json.dumps(replay))
    return skill


def _argv(project: SkillProject, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "--skill-eval",
        "-p",
        "no:cacheprovider",
        "--agents",
        "replay",
        "--env-mode",
        "local",
        "--ek",
        "sandbox=none",
        "--skip-baseline",
        "--results-dir",
        str(project.root / "results"),
        str(project.root / "skills"),
        *extra,
    ]


def _leftovers(sleep: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if sleep in text:
            found.append(f"{cmdline.parent.name}: {text}")
    return found


def _runs(project: SkillProject) -> dict[str, str | None]:
    runs = {}
    for run in sorted((project.root / "results" / "demo").glob("2*")):
        result = run / "result.json"
        runs[run.name] = json.loads(result.read_text())["execution_status"] if result.exists() else None
    return runs


@pytest.mark.skipif(sys.platform != "linux", reason="counts processes through /proc (Linux only)")
@pytest.mark.parametrize(
    ("signals", "gap", "extra"),
    [
        ((signal.SIGINT, signal.SIGINT), 0.05, ()),
        ((signal.SIGINT, signal.SIGINT), 0.7, ()),
        ((signal.SIGTERM,), 0.0, ()),
        ((signal.SIGTERM, signal.SIGINT), 0.05, ()),
        ((signal.SIGTERM, signal.SIGINT), 0.7, ()),
        ((signal.SIGTERM,), 0.0, ("-n", "2")),
    ],
    ids=[
        "ctrl-c-twice-at-once",
        "ctrl-c-twice-while-exiting",
        "sigterm",
        "sigterm-then-ctrl-c-at-once",
        "sigterm-then-ctrl-c-while-exiting",
        "sigterm-xdist",
    ],
)
def test_signals_end_the_run_like_one_ctrl_c(
    skill_project: SkillProject, signals: tuple[int, ...], gap: float, extra: tuple[str, ...]
) -> None:
    """The second signal lands either while the first is still being handled, or (0.7 s later) once results are
    written and the process is exiting, where the interpreter would otherwise die of it."""
    sleep = _unique_sleep()
    _skill(skill_project, sleep)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    previous = subprocess.run(
        _argv(skill_project, "-k", "quick"),
        cwd=skill_project.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert previous.returncode == 0, previous.stdout + previous.stderr
    latest = skill_project.root / "results" / "demo" / "latest"
    previous_run = os.readlink(latest)
    previous_bytes = (latest.parent / previous_run / "result.json").read_bytes()

    proc = start_interruptible(_argv(skill_project, *extra), skill_project.root, env)
    try:
        deadline = time.monotonic() + 240
        while not _leftovers(sleep):  # the slow trial's command is running
            assert proc.poll() is None and time.monotonic() < deadline, "the sleeping trial never started"
            time.sleep(0.1)
        time.sleep(0.5)
        for sig in signals:
            proc.send_signal(sig)
            time.sleep(gap)
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = output.decode(errors="replace")

    assert proc.returncode == pytest.ExitCode.INTERRUPTED, text
    assert "Task was destroyed but it is pending" not in text  # the interrupted trial was cancelled and cleaned up
    runs = _runs(skill_project)
    assert runs.pop(previous_run) == "succeeded"
    assert list(runs.values()) == ["interrupted"], text
    assert os.readlink(latest) == previous_run
    assert (latest.parent / previous_run / "result.json").read_bytes() == previous_bytes
    time.sleep(0.5)
    assert _leftovers(sleep) == []


@pytest.mark.parametrize(("error", "stops"), [("keyboard-interrupt", True), ("crashed", False), (None, False)])
def test_a_worker_stopped_by_ctrl_c_stops_the_controller_rather_than_being_replaced(error: object, stops: bool) -> None:
    """xdist reports a worker that ended on a Ctrl+C as down with "keyboard-interrupt" and would start another in
    its place; the controller stops as on its own Ctrl+C instead. A crashed worker is left to xdist."""
    from pytest_skilleval.plugin import XdistHooks

    hooks = XdistHooks()
    if stops:
        with pytest.raises(KeyboardInterrupt):
            hooks.pytest_testnodedown(node=object(), error=error)
    else:
        hooks.pytest_testnodedown(node=object(), error=error)  # returns: xdist decides
