"""The Harbor configuration built for each agent and environment, checked without running any agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings
from pytest_skilleval.harbor.runner import (
    LOCAL_ENV_IMPORT_PATH,
    REPLAY_AGENT_IMPORT_PATH,
    agent_config,
    environment_config,
)

SKILL = Path("/skills/demo")
STAGED = Path("/run/_skills/demo")


def _spec(agent: str, arm: str = "with_skill") -> TrialSpec:
    return TrialSpec(skill_dir=SKILL, skill_name="demo", case_id="c1", source="dataset", agent=agent, arm=arm,
                     attempt=1)


@pytest.mark.parametrize("agent", ["codex", "claude-code", "opencode"])
def test_real_agents_get_their_harbor_name_model_and_the_skill(agent: str) -> None:
    settings = RunSettings(agents=[agent], agent_models={agent: f"provider/{agent}-model"})
    config = agent_config(_spec(agent), settings, STAGED)
    assert config.name == agent
    assert config.import_path is None
    assert config.model_name == f"provider/{agent}-model"
    assert config.skills == [str(STAGED)]


@pytest.mark.parametrize("agent", ["codex", "claude-code", "opencode", "replay"])
def test_the_baseline_arm_gets_no_skill(agent: str) -> None:
    config = agent_config(_spec(agent, "without_skill"), RunSettings(agents=[agent]), STAGED)
    assert config.skills == []


def test_claude_alias_is_canonicalised() -> None:
    assert RunSettings(agents=["claude", "codex"]).agents == ["claude-code", "codex"]


def test_model_is_absent_unless_given() -> None:
    assert agent_config(_spec("codex"), RunSettings(agents=["codex"]), STAGED).model_name is None


def test_import_path_agents() -> None:
    config = agent_config(_spec("my_pkg.agents:Mine"), RunSettings(agents=["my_pkg.agents:Mine"]), STAGED)
    assert config.import_path == "my_pkg.agents:Mine"
    assert config.name is None
    assert config.skills == [str(STAGED)]


def test_replay_agent_reads_the_skills_replays() -> None:
    config = agent_config(_spec("replay"), RunSettings(agents=["replay"]), STAGED)
    assert config.import_path == REPLAY_AGENT_IMPORT_PATH
    assert config.kwargs == {"replay_dir": str(SKILL / "evals" / "replays"), "case_id": "c1", "arm": "with_skill"}


def test_environment_configs() -> None:
    local = environment_config(RunSettings(env_mode="local", env_kwargs={"sandbox": "none"}))
    assert local.import_path == LOCAL_ENV_IMPORT_PATH
    assert local.kwargs == {"sandbox": "none"}
    docker = environment_config(RunSettings(env_mode="docker"))
    assert docker.type is not None and docker.type.value == "docker"
    assert docker.import_path is None
    custom = environment_config(RunSettings(env_mode="pkg.envs:MyEnv"))
    assert custom.import_path == "pkg.envs:MyEnv"
