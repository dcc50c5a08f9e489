"""`--ek remote_latency_ms`: the local environment behaving like a cloud sandbox (latency on every call, nothing
answered on the host), and a whole run through it scoring exactly what the plain local environment scores."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.harbor.local_env import LocalEnvironment
from pytest_skilleval.harbor.sandbox.options import local_env_options
from tests.e2e.conftest import make_env, skip_without_bwrap
from tests.support import SkillProject

pytestmark = pytest.mark.e2e


class CountingEnvironment(LocalEnvironment):
    """Records each command the sandbox is sent, so a test can see which calls went to the sandbox."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: list[str] = []

    async def exec(self, command: str, *args: Any, **kwargs: Any):  # type: ignore[override]
        self.commands.append(command)
        return await super().exec(command, *args, **kwargs)


def counting_env(tmp_path: Path, env_kwargs: dict[str, Any]) -> CountingEnvironment:
    env = make_env(tmp_path, "bwrap", env_kwargs)
    env.__class__ = CountingEnvironment
    env.commands = []
    return env  # type: ignore[return-value]


async def folder_calls(env: LocalEnvironment) -> tuple[bool, bool, float]:
    await env.start(force_build=False)
    try:
        began = time.monotonic()
        is_dir = await env.is_dir("/workspace")
        is_file = await env.is_file("/workspace")
        await env.empty_dirs(["/logs/verifier", "/tests"])
        return is_dir, is_file, time.monotonic() - began
    finally:
        await env.stop(delete=True)


def test_remote_like_sends_folder_checks_to_the_sandbox_and_waits_each_call(tmp_path: Path) -> None:
    skip_without_bwrap("bwrap")
    local = counting_env(tmp_path / "plain", {})
    assert asyncio.run(folder_calls(local))[:2] == (True, False)
    assert local.commands == []  # answered on the host

    remote = counting_env(tmp_path / "remote", {"remote_latency_ms": "40"})
    is_dir, is_file, took = asyncio.run(folder_calls(remote))
    assert (is_dir, is_file) == (True, False)  # the same answers, from commands run in the sandbox
    assert len(remote.commands) == 3, remote.commands
    assert took >= 3 * 0.040  # each of the three calls paid its round trip


def test_remote_latency_is_checked_at_start() -> None:
    with pytest.raises(ValueError, match="--ek remote_latency_ms"):
        local_env_options({"remote_latency_ms": "-5"})
    assert local_env_options({"remote_latency_ms": "25"}).remote_latency_ms == 25


def trial_scores(result: dict[str, Any]) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    """Each trial's scores by case, arm and attempt (not its timings)."""
    return {
        (trial["case"], trial["arm"], trial["attempt"]): (
            trial["overall"],
            trial["dimensions"],
            trial["metrics"],
            trial["custom_metrics"],
            trial["status"],
        )
        for trial in result["trials"]
    }


def test_demo_scores_the_same_through_a_remote_like_sandbox(pytester: pytest.Pytester) -> None:
    project = SkillProject(pytester)
    project.copy_hello_skill()
    args = ("skills/hello-skill", "--agents", "replay", "--env-mode", "local", "--n-attempts", "1")
    plain = project.run(*args)
    plain.assert_outcomes(passed=8)
    local_scores = trial_scores(project.result_json("hello-skill"))
    remote = project.run(*args, "--ek", "remote_latency_ms=10")
    remote.assert_outcomes(passed=8)
    remote_scores = trial_scores(project.result_json("hello-skill"))
    assert len(local_scores) == 8 and remote_scores == local_scores


async def chmod_test_script(env: LocalEnvironment, source: Path) -> tuple[int, bool]:
    """Harbor's verifier steps: upload the tests, `chmod +x` the script, run it; its exit code and whether it ran."""
    await env.start(force_build=False)
    try:
        await env.upload_dir(source, "/tests")
        chmod = await env.exec("chmod +x '/tests/test.sh'")
        ran = await env.exec("/tests/test.sh")
        return chmod.return_code, ran.return_code == 0 and "ran" in (ran.stdout or "")
    finally:
        await env.stop(delete=True)


def test_harbors_chmod_of_a_test_script_works_in_a_remote_like_sandbox(tmp_path: Path) -> None:
    """/tests is read-only inside the local sandbox: Harbor's `chmod +x /tests/test.sh` is made on the host, in the
    remote-like mode too (there it ran in the sandbox and failed, so `harbor run` scored no native task: "Permission
    denied", no reward file)."""
    skip_without_bwrap("bwrap")
    source = tmp_path / "tests"
    source.mkdir()
    (source / "test.sh").write_text("#!/bin/bash\necho ran\n")
    (source / "test.sh").chmod(0o644)
    for name, kwargs in (("plain", {}), ("remote", {"remote_latency_ms": "10"})):
        env = make_env(tmp_path / name, "bwrap", kwargs)
        assert asyncio.run(chmod_test_script(env, source)) == (0, True), name
