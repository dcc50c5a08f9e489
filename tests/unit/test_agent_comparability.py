"""Runs stay comparable across Harbor and CLI releases: codex runs with reasoning effort high unless set, Harbor
installs the pinned CLI versions (never the latest, opencode included), and a CLI under `--ek tools` older than the
pinned one is a one-line preflight error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harbor.agents.factory import AgentFactory

from pytest_skilleval.harbor.preflight import local_cli_checks, problems
from pytest_skilleval.harbor.runner import agent_config
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings


def _spec(agent: str, tmp_path: Path) -> TrialSpec:
    return TrialSpec(
        skill_dir=tmp_path, skill_name="s", case_id="c", source="dataset", agent=agent, arm="without_skill", attempt=1
    )


def test_codex_runs_with_reasoning_effort_high_and_the_pinned_cli(tmp_path: Path):
    config = agent_config(_spec("codex", tmp_path), RunSettings(agents=["codex"], env_mode="docker"), None)
    assert config.kwargs["reasoning_effort"] == "high" and config.kwargs["version"] == "0.171.0"
    agent = AgentFactory.create_agent_from_config(config, logs_dir=tmp_path / "logs")  # Harbor takes both as is
    assert agent.options.reasoning_effort == "high" and agent._version == "0.171.0"


def test_an_effort_the_operator_sets_is_kept(tmp_path: Path):
    settings = RunSettings(agents=["codex"], env_mode="docker", agent_kwargs={"codex": {"reasoning_effort": "low"}})
    assert agent_config(_spec("codex", tmp_path), settings, None).kwargs["reasoning_effort"] == "low"


def test_opencode_never_installs_latest(tmp_path: Path):
    config = agent_config(_spec("opencode", tmp_path), RunSettings(agents=["opencode"], env_mode="docker"), None)
    assert config.import_path == "pytest_skilleval.harbor.preinstalled:PreinstalledOpenCode"
    agent = AgentFactory.create_agent_from_config(config, logs_dir=tmp_path / "logs")
    assert agent._version == "1.18.33"  # its install step runs `npm i -g opencode-ai@1.18.33`, not @latest


def test_local_runs_use_the_installed_clis_unpinned(tmp_path: Path):
    settings = RunSettings(agents=["claude-code"], env_mode="local")
    assert "version" not in agent_config(_spec("claude-code", tmp_path), settings, None).kwargs


def _tools(root: Path, version: str) -> Path:
    (root / "node_modules" / ".bin").mkdir(parents=True)
    (root / "node_modules" / ".bin" / "codex").write_text("#!/bin/sh\n")
    package = root / "node_modules" / "@openai" / "codex"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "@openai/codex", "version": version}))
    return root


@pytest.mark.parametrize(("version", "problem"), [("0.99.0", True), ("0.171.0", False), ("0.200.1", False)])
def test_a_too_old_cli_under_ek_tools_is_one_line(tmp_path: Path, version: str, problem: bool):
    tools = _tools(tmp_path / "tools", version)
    settings = RunSettings(agents=["codex"], env_mode="local", env_kwargs={"tools": str(tools)})
    found = problems(local_cli_checks(settings))
    if problem:
        assert found == [
            f"agent codex CLI: --ek tools={tools} has @openai/codex 0.99.0, older than the pinned 0.171.0 that runs "
            f"are compared at; run `npm install --prefix {tools} @openai/codex@0.171.0`"
        ]
    else:
        assert found == []
