"""The NVIDIA single-key route end to end: `SKILL_EVAL_LLM_PROVIDER=nv_build` and one `NVIDIA_API_KEY`, no
OpenAI or Anthropic key, no `--agent-model`: codex, claude-code and opencode (the pinned CLIs from npm) each run the
demo skill's positive case and negative control in both arms, and the judges grade them.

The scripted model server stands in for NVIDIA Build and, like it, speaks chat completions only (`/responses` and
`/messages` answer 404) and accepts only the NVIDIA key. opencode talks to it directly; codex (Responses API) and
claude-code (Anthropic Messages) reach it only through the bridge (litellm's proxy, started by the run). Every
agent request arrives as a chat completion for Nemotron Super under the NVIDIA key, and the key is in no file the
run wrote.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.harbor.nv_route import DEFAULT_MODEL
from tests.e2e.agent_runs import NEGATIVE_CASE, POSITIVE_CASE, SKILL
from tests.e2e.test_agent_clis import (
    CLAUDE_CODE,
    CODEX,
    OPENCODE,
    CliAgent,
    _needs_bwrap,
    check_run,
    script,
)
from tests.plugin.test_judge_runs import _script as judge_script
from tests.support import SkillProject

pytestmark = [pytest.mark.e2e, pytest.mark.agents]

NVIDIA_KEY = "nvapi-singlekey-Zx81Qw27Lm45Rt90"
JUDGE = "nvidia/judge-demo"
OWN_KEYS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CODEX_API_KEY")
JUDGE_VARS = ("SKILL_EVAL_JUDGE_MODEL", "SKILL_EVAL_LLM_MODEL", "SKILL_EVAL_LLM_API_KEY")

AGENTS = {
    "codex": (dataclasses.replace(CODEX, queue=DEFAULT_MODEL), f"{SKILL}/SKILL.md"),
    "claude-code": (dataclasses.replace(CLAUDE_CODE, queue=DEFAULT_MODEL), "Writes a welcome greeting file"),
    "opencode": (dataclasses.replace(OPENCODE, name="opencode", queue=DEFAULT_MODEL), "Writes a welcome greeting file"),
}


def nvidia_script(agent: CliAgent, marker: str) -> dict[str, Any]:
    """The agent's script on Nemotron Super's queue, plus the judges' replies on their own model."""
    document = script(agent, marker)
    document["models"][JUDGE] = judge_script(JUDGE)["models"][JUDGE]
    return document


def files_under(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and not path.is_symlink()]


@pytest.mark.parametrize("name", list(AGENTS))
def test_one_nvidia_key_runs_the_agent_through_chat_completions_only(
    name: str, skill_project: SkillProject, scripted_model, agent_clis, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs_bwrap()
    agent, marker = AGENTS[name]
    server = scripted_model(nvidia_script(agent, marker), dialects=("chat",), require_key=NVIDIA_KEY)
    for variable in (*OWN_KEYS, *JUDGE_VARS):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("SKILL_EVAL_LLM_PROVIDER", "nv_build")
    monkeypatch.setenv("NVIDIA_API_KEY", NVIDIA_KEY)
    monkeypatch.setenv("SKILL_EVAL_LLM_BASE_URL", server.openai_base_url)  # "NVIDIA Build" for judges and agents
    monkeypatch.setenv("LLM_JUDGE_MODEL", JUDGE)
    skill_project.copy_hello_skill()
    result = skill_project.run(
        "--agents",
        agent.name,
        "--env-mode",
        "local",
        "--ek",
        "sandbox=bwrap",
        "--ek",
        f"tools={agent_clis.prefix}",
        "-k",
        f"{POSITIVE_CASE} or {NEGATIVE_CASE}",
    )

    posts = [entry for entry in server.requests if entry.method == "POST"]
    assert posts and all(entry.status == 200 for entry in posts), [(e.path, e.status) for e in posts]
    assert {entry.dialect for entry in posts} == {"chat"}, "every request reached NVIDIA Build as a chat completion"
    agent_models = {entry.model for entry in posts if entry.model != JUDGE}
    assert agent_models == {DEFAULT_MODEL}, agent_models  # Nemotron Super by default, the catalog id whole
    assert any(entry.model == JUDGE for entry in posts), "the judges ran on the same key"
    check_run(agent, marker, server, skill_project.root)

    # The key went to "NVIDIA Build" only (the server refuses any other), and is in no file or line of the run.
    for path in files_under(skill_project.root / "results"):
        assert NVIDIA_KEY.encode() not in path.read_bytes(), path
    assert NVIDIA_KEY not in result.stdout.str() + result.stderr.str()
