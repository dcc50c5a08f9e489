"""The Harbor configuration built for each agent and environment, checked without running any agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilleval.harbor.environments import CAPPED_DOCKER_IMPORT_PATH, LOCAL_ENV_IMPORT_PATH
from pytest_skilleval.harbor.runner import (
    REPLAY_AGENT_IMPORT_PATH,
    agent_config,
    environment_config,
)
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings

SKILL = Path("/skills/demo")
STAGED = Path("/run/_skills/demo")


def _spec(agent: str, arm: str = "with_skill") -> TrialSpec:
    return TrialSpec(
        skill_dir=SKILL, skill_name="demo", case_id="c1", source="dataset", agent=agent, arm=arm, attempt=1
    )


@pytest.mark.parametrize("agent", ["codex", "claude-code", "opencode"])
def test_real_agents_get_their_harbor_name_model_and_the_skill(agent: str) -> None:
    settings = RunSettings(agents=[agent], agent_models={agent: f"provider/{agent}-model"})
    config = agent_config(_spec(agent), settings, STAGED)
    if agent == "opencode":  # Harbor's own opencode installs @latest from the network: ours skips an installed CLI
        assert config.import_path == "pytest_skilleval.harbor.preinstalled:PreinstalledOpenCode"
    else:
        assert config.name == agent and config.import_path is None
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
    docker = environment_config(RunSettings(env_mode="docker"))  # Harbor's Docker environment, capped
    assert docker.import_path == CAPPED_DOCKER_IMPORT_PATH and docker.type is None
    custom = environment_config(RunSettings(env_mode="pkg.envs:MyEnv"))
    assert custom.import_path == "pkg.envs:MyEnv"


def test_agent_kwargs_reach_only_their_agent() -> None:
    settings = RunSettings(
        agents=["terminus-2", "codex"],
        agent_kwargs={"terminus-2": {"record_terminal_session": False, "api_base": "http://h/v1"}},
    )
    assert agent_config(_spec("terminus-2"), settings, STAGED).kwargs == {
        "record_terminal_session": False,
        "api_base": "http://h/v1",
    }
    # codex gets only what keeps runs comparable (test_agent_comparability.py), none of terminus-2's
    assert agent_config(_spec("codex"), settings, STAGED).kwargs == {"reasoning_effort": "high", "version": "0.171.0"}


def test_agent_kwargs_for_import_path_agents_and_aliases() -> None:
    settings = RunSettings(
        agents=["pkg.mod:Agent", "claude"], agent_kwargs={"pkg.mod:Agent": {"x": 1}, "claude": {"y": "z"}}
    )
    assert agent_config(_spec("pkg.mod:Agent"), settings, STAGED).kwargs == {"x": 1}
    assert agent_config(_spec("claude-code"), settings, STAGED).kwargs == {"y": "z", "version": "2.1.332"}


def test_replay_keeps_its_own_kwargs_beside_agent_kwargs() -> None:
    settings = RunSettings(agents=["replay"], agent_kwargs={"replay": {"extra": True}})
    kwargs = agent_config(_spec("replay"), settings, STAGED).kwargs
    assert kwargs["extra"] is True and kwargs["case_id"] == "c1" and kwargs["arm"] == "with_skill"


def test_agent_kwarg_values_are_json_when_they_parse() -> None:
    from pytest_skilleval.options import parse_option

    parsed = parse_option(
        "agent_kwarg",
        [
            "terminus-2:record_terminal_session=false",
            "terminus-2:api_base=http://127.0.0.1:1/v1",
            "pkg.mod:Agent:n=3",
            'terminus-2:llm_kwargs={"temperature": 0}',
            'a:s="123"',
        ],
    )
    assert parsed == {
        "terminus-2": {
            "record_terminal_session": False,
            "api_base": "http://127.0.0.1:1/v1",
            "llm_kwargs": {"temperature": 0},
        },
        "pkg.mod:Agent": {"n": 3},
        "a": {"s": "123"},
    }


def test_trials_starting_at_once_build_a_skills_image_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Trials in flight ask for the skill's environment from worker threads at the same moment (--n-concurrent):
    the Docker image is built once, not once per trial that asked before the first build ended."""
    import threading
    import time
    from types import SimpleNamespace

    from pytest_skilleval.harbor import runner as runner_module

    builds: list[str] = []

    def slow_build(plan: object, run_id: str, rebuild: bool = False, run_only: bool = False) -> str:
        builds.append(run_id)
        time.sleep(0.2)
        return "skilleval-demo:run"

    monkeypatch.setattr(runner_module, "image_plan", lambda *args: object())
    monkeypatch.setattr(runner_module, "ensure_image", slow_build)
    skill = SimpleNamespace(path=tmp_path, settings=RunSettings(env_mode="docker"))
    runner = runner_module.SkillEvalRunner(tmp_path / "run", {}, run_id="run")
    found: list[object] = []
    threads = [threading.Thread(target=lambda: found.append(runner.task_environment(skill))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert builds == ["run"]
    assert len(found) == 4 and all(environment is found[0] for environment in found)


def test_the_alias_model_reaches_the_agent() -> None:
    """`--agent-model claude=M` is the model of `claude-code` (it was dropped: the trial ran Harbor's default)."""
    settings = RunSettings(agents=["claude"], agent_models={"claude": "provider/m"})
    assert agent_config(_spec("claude-code"), settings, STAGED).model_name == "provider/m"


def test_a_variant_gets_its_own_model_under_its_agent_name() -> None:
    settings = RunSettings(agents=["codex"], agent_models={"codex": ["p/a", "p/b", "p/a"]})
    assert [v.name for v in settings.variants] == ["codex@p/a", "codex@p/b"]
    config = agent_config(_spec("codex@p/b"), settings, STAGED)
    assert (config.name, config.model_name) == ("codex", "p/b")


def test_claude_code_behind_a_custom_endpoint_asks_for_the_model_without_its_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Harbor 0.24 would tell Claude Code `anthropic/m` behind ANTHROPIC_BASE_URL (0.25: `m`); the agent's own
    environment says `m` on both, its aliases too unless the host sets one; without a custom endpoint nothing."""
    settings = RunSettings(agents=["claude"], agent_models={"claude": "anthropic/m"})
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    assert "ANTHROPIC_MODEL" not in agent_config(_spec("claude-code"), settings, STAGED).env
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("ANTHROPIC_DEFAULT_HAIKU_MODEL", "small")
    for name in ("ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    env = agent_config(_spec("claude-code"), settings, STAGED).env
    assert env["ANTHROPIC_MODEL"] == "m" and env["ANTHROPIC_DEFAULT_SONNET_MODEL"] == "m"
    assert env["CLAUDE_CODE_SUBAGENT_MODEL"] == "m" and env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == "small"


@pytest.mark.parametrize("agent", ["codex", "claude-code", "opencode"])
def test_opencode_is_told_not_to_fetch_the_models_catalog(agent: str) -> None:
    """opencode fetches models.dev's catalog at every start (seconds offline, and a sandbox is often offline); it
    knows the models from the catalog it ships, so its trials run with the fetch off. No other agent gets the
    variable."""
    env = agent_config(_spec(agent), RunSettings(agents=[agent]), STAGED).env
    assert (env.get("OPENCODE_DISABLE_MODELS_FETCH") == "1") is (agent == "opencode")
