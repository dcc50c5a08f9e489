"""Command output is capped while the command runs (issue 27): past 16 MiB of stdout and stderr together the
command's process group is ended and the exec fails naming the cap; a trial's commands together hand the pytest
process at most 64 MiB; a replay printing 20 MB fails its trial and does not grow pytest."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from harbor.models.task.config import EnvironmentConfig as TaskEnvironmentConfig
from harbor.models.trial.paths import TrialPaths

from pytest_skilleval.harbor.local_env import LocalEnvironment
from pytest_skilleval.harbor.sandbox.commands import OutputCapExceeded
from tests.support import LOCAL_REPLAY, SkillProject, shell_replay, simple_entries

pytestmark = pytest.mark.e2e
CAP = 16 * 1024 * 1024  # the documented per-command cap, stdout and stderr together
MiB = 1024 * 1024


def _environment(tmp_path: Path) -> LocalEnvironment:
    paths = TrialPaths(trial_dir=tmp_path / "trial")
    paths.mkdir()
    return LocalEnvironment(
        environment_dir=tmp_path / "environment",
        environment_name="t",
        session_id="t__env",
        trial_paths=paths,
        task_env_config=TaskEnvironmentConfig(),
        sandbox="none",
    )


async def _execs(tmp_path: Path, *commands: str) -> list[object]:
    """Harbor ExecResults, or the exception an exec raised, one per command, in one trial's environment."""
    env = _environment(tmp_path)
    await env.start(force_build=False)
    results: list[object] = []
    try:
        for command in commands:
            try:
                results.append(await env.exec(command, timeout_sec=120))
            except OutputCapExceeded as error:
                results.append(error)
        return results
    finally:
        await env.stop(delete=True)


def test_output_within_the_cap_is_kept_whole(tmp_path: Path) -> None:
    [result] = asyncio.run(_execs(tmp_path, f"head -c {CAP - 10} /dev/zero | tr '\\0' a; echo tail >&2"))
    assert result.return_code == 0  # type: ignore[attr-defined]
    assert result.stdout == "a" * (CAP - 10)  # type: ignore[attr-defined]
    assert result.stderr == "tail\n"  # type: ignore[attr-defined]


def test_a_commands_output_is_held_in_memory_not_in_the_temp_folder(tmp_path: Path) -> None:
    """stdout and stderr are anonymous in-memory files (memfd): no inode on the temp folder's file system per
    command (creating those was measurable CPU at 100 trials in flight)."""
    [result] = asyncio.run(_execs(tmp_path, "readlink /proc/self/fd/1 /proc/self/fd/2"))
    assert result.stdout.split("\n")[:2] == [  # type: ignore[attr-defined]
        "/memfd:skilleval-stdout (deleted)",
        "/memfd:skilleval-stderr (deleted)",
    ]


def test_a_command_past_the_cap_is_ended_with_its_process_group(tmp_path: Path) -> None:
    """stdout and stderr count together; an endless writer is ended at once, not at its timeout, and a child it
    started in its process group goes with it."""
    survivor = tmp_path / "survivor"
    command = f"(sleep 3; touch {survivor}) & head -c {CAP // 2 + MiB} /dev/zero; yes >&2"
    started = time.monotonic()
    [error] = asyncio.run(_execs(tmp_path, command))
    assert time.monotonic() - started < 60
    assert isinstance(error, OutputCapExceeded)
    assert "more than the 16777216-byte (16 MiB) cap on one command's stdout and stderr together" in str(error)
    assert "the trial fails rather than keep part of its output; command: (sleep 3;" in str(error)
    time.sleep(4)
    assert not survivor.exists()


def test_a_trials_commands_together_stop_at_the_trial_cap(tmp_path: Path) -> None:
    each = f"head -c {15 * MiB} /dev/zero"
    results = asyncio.run(_execs(tmp_path, each, each, each, each, each))
    assert [type(result).__name__ for result in results] == ["ExecResult"] * 4 + ["OutputCapExceeded"]
    assert "more than the 67108864-byte (64 MiB) cap on all of one trial's command output" in str(results[4])


def _peak_rss_kib(project: SkillProject, *args: str) -> tuple[int, subprocess.CompletedProcess[str]]:
    """pytest run in a fresh parent that reports its children's peak resident size (pytest's own, the largest)."""
    probe = (
        "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(done.returncode)"
    )
    argv = [sys.executable, "-c", probe, sys.executable, "-m", "pytest", "--skill-eval", "-p", "no:cacheprovider"]
    argv += ["--results-dir", str(project.root / "results"), *args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    done = subprocess.run(argv, cwd=project.root, env=env, capture_output=True, text=True, timeout=600)
    return int(done.stderr.strip().splitlines()[-1]), done


def test_a_replay_printing_20_mb_fails_and_does_not_grow_pytest(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("loud", "quiet"))
    replays = skill / "evals" / "replays"
    (replays / "loud.json").write_text(json.dumps(shell_replay("head -c 20000000 /dev/zero | tr '\\0' a")))
    (replays / "quiet.json").write_text(json.dumps(shell_replay("head -c 1000000 /dev/zero | tr '\\0' a")))
    common = ("--skip-baseline", *LOCAL_REPLAY, "--ek", "sandbox=none")
    quiet, _ = _peak_rss_kib(skill_project, *common, "-k", "quiet")
    loud, done = _peak_rss_kib(skill_project, *common, "-k", "loud")
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert "1 error" in last and "passed" not in last, last
    [trial] = skill_project.result_json("demo")["trials"]
    assert trial["status"] == "error"
    assert "(16 MiB) cap on one command's stdout and stderr together" in json.dumps(trial)
    assert loud - quiet < 40 * 1024, (quiet, loud)  # KiB: the 20 MB never reaches pytest's memory


def test_in_docker_a_replay_printing_20_mb_fails_naming_the_cap(
    skill_project: SkillProject, test_base_image: str
) -> None:
    """Harbor read a `docker compose exec`'s output whole; now it is read against the same caps."""
    skill = skill_project.make_skill("demo", simple_entries("loud"))
    loud = "head -c 20000000 /dev/zero | tr '\\0' a"
    (skill / "evals" / "replays" / "loud.json").write_text(json.dumps(shell_replay(loud)))
    result = skill_project.run(
        "--agents", "replay", "--env-mode", "docker", "--base-image", test_base_image, "--skip-baseline",
    )  # fmt: skip
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) == 0 and outcomes.get("errors", outcomes.get("error", 0)) == 1, outcomes
    [trial] = skill_project.result_json("demo")["trials"]
    assert trial["status"] == "error"
    assert "(16 MiB) cap on one command's stdout and stderr together" in json.dumps(trial)


def test_a_running_command_does_not_wake_the_event_loop(tmp_path: Path) -> None:
    """The cap is watched off the event loop: a command running 1 s wakes the loop no more than one that ends at
    once (polling every 50 ms made it 20 more)."""
    wakes = 0

    def counting(select: Any) -> Any:
        def counted(timeout: float | None = None) -> Any:
            nonlocal wakes
            wakes += 1
            return select(timeout)

        return counted

    async def timed() -> list[int]:
        env = _environment(tmp_path)
        await env.start(force_build=False)
        try:
            selector = asyncio.get_running_loop()._selector  # type: ignore[attr-defined]
            selector.select = counting(selector.select)
            counts = []
            for command in ("echo done", "sleep 1; echo done"):
                before = wakes
                result = await env.exec(command, timeout_sec=120)
                assert result.stdout == "done\n"
                counts.append(wakes - before)
            return counts
        finally:
            await env.stop(delete=True)

    at_once, after_a_second = asyncio.run(timed())
    assert after_a_second <= at_once + 5, (at_once, after_a_second)


def test_commands_at_once_are_capped_each_on_their_own(tmp_path: Path) -> None:
    """Of two trials' commands running at once, only the one past the cap is ended."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()

    async def both() -> list[list[object]]:
        return await asyncio.gather(
            _execs(tmp_path / "a", "yes"), _execs(tmp_path / "b", f"sleep 1; head -c {CAP - 10} /dev/zero | wc -c")
        )

    [[over], [within]] = asyncio.run(both())
    assert isinstance(over, OutputCapExceeded)
    assert within.stdout.strip() == str(CAP - 10)  # type: ignore[attr-defined]


def test_a_check_that_fails_ends_its_command_and_the_watcher_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An error in the watcher's check of one command used to end the watcher thread silently: that command and every
    later one ran uncapped. Now the command is ended, its exec says why, the log says so, and the next one is capped."""
    from pytest_skilleval.harbor.sandbox import commands

    size = commands._size
    broken = [True]

    def failing_once(fds: Iterable[int]) -> int:
        if broken[0] and threading.current_thread().name == "skilleval-output-cap":
            broken[0] = False
            raise OSError("planted failure")
        return size(fds)

    monkeypatch.setattr(commands, "_size", failing_once)

    async def both() -> list[tuple[object, float]]:
        env = _environment(tmp_path)
        await env.start(force_build=False)
        ended: list[tuple[object, float]] = []
        try:
            for command in ("sleep 20", f"head -c {CAP + MiB} /dev/zero; sleep 20"):  # ended at once, or not
                started = time.monotonic()
                try:
                    ended.append((await env.exec(command, timeout_sec=30), time.monotonic() - started))
                except OutputCapExceeded as error:
                    ended.append((error, time.monotonic() - started))
            return ended
        finally:
            await env.stop(delete=True)

    with caplog.at_level(logging.ERROR, logger=commands.__name__):
        [(unchecked, first), (over, second)] = asyncio.run(both())
    assert isinstance(unchecked, OutputCapExceeded) and first < 10
    assert "could not be checked against the 16777216-byte (16 MiB) cap while it ran (OSError: planted failure)" in str(
        unchecked
    )
    assert "command: sleep 20" in str(unchecked)
    assert any("could not be checked (OSError: planted failure)" in record.getMessage() for record in caplog.records)
    assert isinstance(over, OutputCapExceeded) and "cap on one command's stdout" in str(over) and second < 10
