"""`--agent-kwarg AGENT:KEY=VALUE`: command line only, reaches the agent's constructor, secrets never written."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, simple_entries
from verifier.redact import REDACTED


def _run_config(root: Path, skill: str) -> dict:
    (path,) = sorted((root / "results" / skill).glob("2*/run_config.json"))[-1:]
    return json.loads(path.read_text())


def test_kwargs_reach_the_agent_and_a_secret_is_written_nowhere(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    secret = "sk-test-" + secrets.token_hex(16)
    plain = "http://127.0.0.1:9/v1"
    basetemp = skill_project.root / "basetemp"
    result = skill_project.run(
        *LOCAL_REPLAY,
        "--ek",
        "sandbox=none",
        "--skip-baseline",
        "--basetemp",
        str(basetemp),
        "--harbor-keep-jobs",
        "--agent-kwarg",
        f"replay:api_key={secret}",
        "--agent-kwarg",
        "replay:record_terminal_session=false",
        "--agent-kwarg",
        f"replay:api_base={plain}",
        "--agent-kwarg",
        f'replay:llm_kwargs={{"api_key": "{secret}"}}',
    )
    result.assert_outcomes(passed=1)
    kwargs = _run_config(skill_project.root, "demo")["agent_kwargs"]["replay"]
    assert kwargs["record_terminal_session"] is False and kwargs["api_base"] == plain
    assert kwargs["api_key"] in ("<redacted>", REDACTED) and kwargs["llm_kwargs"]["api_key"] in ("<redacted>", REDACTED)
    # Harbor's own trial config holds the kwargs: they reached the agent's AgentConfig, with the secret scrubbed.
    (trial_config,) = basetemp.rglob("trials/*/config.json")
    agent = json.loads(trial_config.read_text())["agent"]
    assert agent["kwargs"]["record_terminal_session"] is False and agent["kwargs"]["api_base"] == plain
    assert secret not in result.stdout.str() + result.stderr.str()
    for root in (skill_project.root / "results", basetemp):
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                assert secret.encode() not in path.read_bytes(), path


def test_config_yml_cannot_set_agent_kwargs(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    (skill / "evals" / "config.yml").write_text(
        "harbor:\n  agents:\n    replay:\n      model: m\n      api_base: http://x\n"
    )
    result = skill_project.run(*LOCAL_REPLAY, "--collect-only", subprocess=False)
    out = result.stdout.str()
    assert "harbor.agents.replay.api_base: unknown key; a skill's config cannot set agent constructor settings" in out
    assert "--agent-kwarg" in out and "host's provider variables" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent-kwarg", "replay=1"], "--agent-kwarg expects AGENT:KEY=VALUE"),
        (["--agent-kwarg", "codex:api_base=http://x"], "names agent(s) codex that this run does not use"),
        (
            ["--agent-kwarg", "replay:model_name=x"],
            "'model_name' is set by Harbor or the plugin and cannot be passed (use --agent-model)",
        ),
        (["--agent-kwarg", "replay:skills_dir=/x"], "'skills_dir' is set by Harbor or the plugin"),
    ],
)
def test_bad_agent_kwargs_are_usage_errors(skill_project: SkillProject, args: list[str], message: str) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run(*LOCAL_REPLAY, "--collect-only", *args, subprocess=False)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str() + result.stdout.str()
