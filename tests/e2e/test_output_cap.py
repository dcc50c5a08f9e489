"""Command output over the 32 MiB cap says where it was cut (issue 9, item 11)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from harbor.models.task.config import EnvironmentConfig as TaskEnvironmentConfig
from harbor.models.trial.paths import TrialPaths

from pytest_skilleval.harbor.local_env import LocalEnvironment

pytestmark = pytest.mark.e2e
CAP = 32 * 1024 * 1024  # the documented per-stream cap


async def _exec(tmp_path: Path, command: str):  # returns Harbor's ExecResult
    paths = TrialPaths(trial_dir=tmp_path / "trial")
    paths.mkdir()
    env = LocalEnvironment(
        environment_dir=tmp_path / "environment",
        environment_name="t",
        session_id="t__env",
        trial_paths=paths,
        task_env_config=TaskEnvironmentConfig(),
        sandbox="none",
    )
    await env.start(force_build=False)
    try:
        return await env.exec(command, timeout_sec=120)
    finally:
        await env.stop(delete=True)


def test_output_cut_at_the_cap_carries_a_marker(tmp_path: Path) -> None:
    result = asyncio.run(_exec(tmp_path, f"head -c {CAP + 10} /dev/zero | tr '\\0' a; echo tail >&2"))
    assert result.return_code == 0
    assert result.stdout.startswith("a" * 1000)
    assert result.stdout.endswith(f"[output cut at {CAP} bytes: 10 more bytes of {CAP + 10} were not kept]\n")
    assert result.stderr == "tail\n"
