"""A real trial leaves its process's start gate (harbor/start_gate.py) once its `local` sandbox has started, that
start being this host's work; a remote-like sandbox's trial leaves it once created, so it never queues behind
another's wait; a sandbox whose start fails still lets the gate go."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.harbor.local_env import LocalEnvironment
from pytest_skilleval.harbor.runner import run_trial
from tests.e2e.conftest import make_env, make_task, trial_config

pytestmark = pytest.mark.e2e


def _events_of_a_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: str, env_kwargs: dict[str, Any] | None = None
) -> list[str]:
    events: list[str] = []
    last_step = LocalEnvironment._upload_environment_dir_after_start

    async def start_ends(self: LocalEnvironment) -> None:
        await last_step(self)
        events.append("sandbox started")

    monkeypatch.setattr(LocalEnvironment, "_upload_environment_dir_after_start", start_ends)

    async def agent_starts(_trial: Any) -> None:
        events.append("agent starts")

    task = make_task(tmp_path, "echo 1 > \"${HARBOR_REWARD_TXT:-/logs/verifier/reward.txt}\"\n")
    config = trial_config(task, tmp_path / "trials", sandbox=sandbox, env_kwargs=env_kwargs)
    result = asyncio.run(
        run_trial(config, None, at_agent_start=agent_starts, started=lambda: events.append("gate left"))
    )
    assert result.exception_info is None
    assert result.verifier_result.rewards == {"reward": 1.0}
    return events


def test_a_local_trial_leaves_the_gate_once_its_sandbox_has_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox_mode: str
) -> None:
    events = _events_of_a_trial(tmp_path, monkeypatch, sandbox_mode)
    assert events == ["sandbox started", "gate left", "agent starts"]


def test_a_remote_like_trial_leaves_the_gate_once_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox_mode: str
) -> None:
    events = _events_of_a_trial(tmp_path, monkeypatch, sandbox_mode, {"remote_latency_ms": 1})
    assert events == ["gate left", "sandbox started", "agent starts"]


def test_a_sandbox_whose_start_fails_still_lets_the_gate_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox_mode: str
) -> None:
    environment = make_env(tmp_path, sandbox_mode)
    left: list[str] = []
    assert environment.release_after_start(lambda: left.append("gate left")) is True

    def no_keeper(self: LocalEnvironment) -> None:
        raise RuntimeError("local environment: no sandbox: test")

    monkeypatch.setattr(LocalEnvironment, "_new_keeper", no_keeper)
    with pytest.raises(RuntimeError, match="no sandbox"):
        asyncio.run(environment.start(force_build=False))
    assert left == ["gate left"]
