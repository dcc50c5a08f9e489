"""An interrupt at any moment leaves a resumable run: the run folder (run_config.json, the dataset digest) exists
before the first trial starts, so SIGTERM or Ctrl+C with 0, 1 or k of n trials finished still writes result.json
marked interrupted with those trials, and `--resume latest` runs only the rest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pytest_skilleval.harbor.scheduler import CANCEL_GRACE_SECONDS
from tests.plugin.test_signals import _argv, _leftovers, _unique_sleep
from tests.plugin.test_trial_processes import _trial_processes_in
from tests.support import SkillProject, simple_entries, start_interruptible


def _skill(project: SkillProject, quick: int, sleep: str, flag: Path) -> list[str]:
    """`quick` cases that echo and one `slow` case that sleeps until `flag` exists (then it echoes too: the resumed
    run finishes it without a change to the skill, which --resume would refuse)."""
    cases = [f"q{n}" for n in range(1, quick + 1)] + ["slow"]
    skill = project.make_skill("demo", simple_entries(*cases))
    for case in cases:
        command = "echo quick" if case != "slow" else f"[ -e {flag} ] && echo done || sleep {sleep}"
        path = skill / "evals" / "replays" / f"{case}.json"
        replay = json.loads(path.read_text())
        replay["steps"][1]["tool_calls"][0]["arguments"]["command"] = command
        path.write_text(json.dumps(replay))
    return cases


def _trial_files(project: SkillProject) -> list[Path]:
    return sorted((project.root / "results" / "demo").glob("2*/replay/with_skill/trials/*.json"))


@pytest.mark.skipif(sys.platform != "linux", reason="counts processes through /proc (Linux only)")
@pytest.mark.parametrize(
    ("finished", "sig", "extra", "frozen"),
    [
        (0, signal.SIGTERM, (), False),
        (0, signal.SIGINT, ("-n", "2", "--n-concurrent", "1"), False),
        (1, signal.SIGTERM, ("-n", "2"), False),
        (2, signal.SIGINT, ("--n-concurrent", "1"), False),
        (1, signal.SIGINT, ("--trial-processes", "1"), False),
        (2, signal.SIGTERM, ("--trial-processes", "2", "--n-concurrent", "2"), False),
        (1, signal.SIGINT, ("--trial-processes", "1"), True),
    ],
    ids=[
        "0-of-1-sigterm",
        "0-of-1-ctrl-c-xdist-serial",
        "1-of-2-sigterm-xdist",
        "2-of-3-ctrl-c-serial",
        "1-of-2-ctrl-c-trial-process",
        "2-of-3-sigterm-trial-processes",
        "1-of-2-ctrl-c-frozen-trial-process",
    ],
)
def test_an_interrupt_before_the_run_ends_leaves_a_run_that_resume_finishes(
    skill_project: SkillProject, finished: int, sig: int, extra: tuple[str, ...], frozen: bool
) -> None:
    """`frozen`: the trial process stops answering (SIGSTOP) just before the interrupt: the run still stops within
    one grace period (its cancelled trial's answer is waited for once, then the process is killed)."""
    sleep = _unique_sleep()
    # /dev/shm: a host path the unsandboxed trial sees as is (its /tmp is the trial's own folder).
    flag = Path("/dev/shm") / f"skilleval-early-{uuid.uuid4().hex}"
    cases = _skill(skill_project, finished, sleep, flag)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = start_interruptible(_argv(skill_project, *extra), skill_project.root, env)
    try:
        deadline = time.monotonic() + 240
        while not (_leftovers(sleep) and len(_trial_files(skill_project)) >= finished):
            assert proc.poll() is None and time.monotonic() < deadline, "the slow trial never started"
            time.sleep(0.1)
        if frozen:
            trial_processes = _trial_processes_in(skill_project.root)
            assert trial_processes, "no trial process found"
            for pid in trial_processes:
                os.kill(pid, signal.SIGSTOP)
        proc.send_signal(sig)
        signalled = time.monotonic()
        try:
            output, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # pytest's faulthandler prints where each thread waits
            output, _ = proc.communicate(timeout=30)
            pytest.fail("the run did not stop within 120 s of the signal:\n" + output.decode(errors="replace"))
        stopping = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = output.decode(errors="replace")
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, text
    if frozen:  # its trial process was killed as the run ended: its keeper, seeing it gone, kills the command
        deadline = time.monotonic() + 10
        while _leftovers(sleep) and time.monotonic() < deadline:
            time.sleep(0.1)
    assert not _leftovers(sleep), text  # the slow trial's command ended with the run, wherever the trial ran
    # its cancellation was delivered, not waited out (each wait for an answer that never comes takes the 30 s grace
    # period; a loaded machine may take seconds to stop, never two grace periods)
    assert stopping < (CANCEL_GRACE_SECONDS + 20 if frozen else 2 * CANCEL_GRACE_SECONDS), text

    (run,) = sorted((skill_project.root / "results" / "demo").glob("2*"))
    result = json.loads((run / "result.json").read_text())
    assert result["execution_status"] == "interrupted", text
    assert sorted(t["case"] for t in result["trials"]) == cases[:finished]
    assert (run / "run_config.json").is_file() and (run / "dataset_digest.json").is_file()
    assert not (run.parent / "latest").exists()  # an interrupted run never becomes `latest`

    flag.touch()
    try:
        resumed = subprocess.run(
            _argv(skill_project, "--resume", "latest", *extra),
            cwd=skill_project.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        flag.unlink()
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert sorted((skill_project.root / "results" / "demo").glob("2*")) == [run]
    done = json.loads((run / "result.json").read_text())
    assert done["execution_status"] == "succeeded"
    assert sorted(t["case"] for t in done["trials"]) == sorted(cases)
    said = " ".join(resumed.stdout.split())  # the start line wraps at the terminal's width
    runs = "runs 1: slow[replay-with_skill-1]"
    assert f"demo: --resume {run.name}: reuses {finished} of {len(cases)} planned trials, {runs}" in said


def test_a_session_whose_skill_ran_nothing_leaves_no_run_folder(skill_project: SkillProject) -> None:
    """Folders are made at start for every planned skill; one whose items were all deselected is removed again."""
    skill_project.make_skill("demo", simple_entries("c1"))
    skill_project.make_skill("other", simple_entries("c2"))
    result = skill_project.run("--agents", "replay", "--env-mode", "local", "--skip-baseline", "-k", "c2")
    result.assert_outcomes(passed=1)
    assert not (skill_project.root / "results" / "demo").exists() or not list(
        (skill_project.root / "results" / "demo").glob("2*")
    )
    assert len(list((skill_project.root / "results" / "other").glob("2*/result.json"))) == 1


@pytest.mark.skipif(sys.platform != "linux", reason="counts processes through /proc (Linux only)")
@pytest.mark.parametrize("extra", [(), ("-n", "2")], ids=["plain", "xdist"])
def test_resume_after_ctrl_c_with_a_broken_skill_finishes_the_others(
    skill_project: SkillProject, extra: tuple[str, ...]
) -> None:
    """Two skills, one with a broken evals.json, Ctrl+C mid-run, then the printed advice (`--resume <id>`): the run
    stopped at the start, because the broken skill had no folder of that run. Now the good skill finishes its run,
    the broken one is again one collection error; once fixed, the same `--resume` runs its trials in that run."""
    sleep = _unique_sleep()
    flag = Path("/dev/shm") / f"skilleval-early-{uuid.uuid4().hex}"
    cases = _skill(skill_project, 1, sleep, flag)
    broken = skill_project.make_skill("broken", raw="{not json", dataset_name="evals.json")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = start_interruptible(_argv(skill_project, *extra), skill_project.root, env)
    try:
        deadline = time.monotonic() + 240
        while not (_leftovers(sleep) and _trial_files(skill_project)):
            assert proc.poll() is None and time.monotonic() < deadline, "the slow trial never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = " ".join(output.decode(errors="replace").split())
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, text
    (run,) = sorted((skill_project.root / "results" / "demo").glob("2*"))
    assert f"Next: finish this run: the same command with --resume {run.name}" in text

    def resume() -> subprocess.CompletedProcess[str]:
        flag.touch()
        try:
            argv = _argv(skill_project, "--resume", run.name, *extra)
            return subprocess.run(argv, cwd=skill_project.root, env=env, capture_output=True, text=True, timeout=300)
        finally:
            flag.unlink()

    resumed = resume()
    said = " ".join(resumed.stdout.split())
    assert resumed.returncode == pytest.ExitCode.TESTS_FAILED, resumed.stdout + resumed.stderr
    assert "no run" not in said and "2 passed, 1 error" in said, said
    [error] = [line for line in resumed.stdout.splitlines() if line.startswith("ERROR ")]
    assert error.startswith("ERROR skills/broken/evals/evals.json"), error
    assert f"demo: --resume {run.name}: reuses 1 of 2 planned trials, runs 1: slow[replay-with_skill-1]" in said
    done = json.loads((run / "result.json").read_text())
    assert done["execution_status"] == "succeeded" and sorted(t["case"] for t in done["trials"]) == sorted(cases)
    assert sorted((skill_project.root / "results" / "demo").glob("2*")) == [run]
    assert not list((skill_project.root / "results").glob("broken/2*"))  # a skill with nothing to run has no run

    assert skill_project.make_skill("broken", simple_entries("c1")) == broken  # fixed: it joins the run
    resumed = resume()
    said = " ".join(resumed.stdout.split())
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"broken: --resume: run {run.name} holds no trial of this skill" in said
    assert f"demo: --resume {run.name}: reuses 2 of 2 planned trials, runs none" in said
    joined = json.loads((skill_project.root / "results" / "broken" / run.name / "result.json").read_text())
    assert joined["execution_status"] == "succeeded" and [t["case"] for t in joined["trials"]] == ["c1"]
    # a run no skill of the session has is still refused at the start (a mistyped id starts nothing)
    argv = _argv(skill_project, "--resume", "20990101_000000_1_000000000000", *extra)
    refused = subprocess.run(argv, cwd=skill_project.root, env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR and "no run 20990101_000000_1_000000000000" in (
        refused.stderr
    )
