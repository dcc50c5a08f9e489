"""The codex and claude-code CLIs end to end through `pytest --skill-eval`, against the scripted model server.

The pinned CLIs come from the `agent_clis` fixture (installed from npm into a cached folder on first use; skipped
only where node or npm is missing, and a failure under CI) and reach the sandbox read-only through `--ek tools=DIR`,
so Harbor's installed agents skip their download at start. Trials run in the `local` environment under bwrap, one
sandbox per trial with real container paths (`/workspace`, the agent's own HOME), which these CLIs need.

Each run covers the demo skill's positive case and its negative control in both arms. The script makes the agent do
what each case needs, as the CLI's own tools: with the skill, read SKILL.md and run its script; without it, write a
wrong greeting by hand; for the control, write the answer. The test checks the ATIF trajectory the agent wrote (read
back through Harbor's `Trajectory` model), the scores, and that the baseline's requests and trajectory never held
the skill.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_skilleval.testing.script import regex_all
from tests.e2e.agent_runs import (
    NEGATIVE_CASE,
    POSITIVE_CASE,
    SKILL,
    assert_arms_scored_as_scripted,
    assert_baseline_never_saw_the_skill,
    trials,
)
from tests.support import SkillProject, require_system

pytestmark = [pytest.mark.e2e, pytest.mark.agents, pytest.mark.slow]

ADA = "Ada Lovelace"
ARITHMETIC = "17 multiplied by 23"
HAND_GREETING = "mkdir -p /workspace/output && printf 'Hello Ada Lovelace\\n' > /workspace/output/greeting.txt"
ANSWER = "mkdir -p /workspace/output && echo 391 > /workspace/output/answer.txt"


@dataclass(frozen=True)
class CliAgent:
    """How one CLI is driven: its Harbor name, model, the marker its with-skill requests hold, its shell tool."""

    name: str
    model: str  # --agent-model
    queue: str  # the model name its requests carry (the script's queue)
    skills_dir: str  # where Harbor registers the skill for this CLI
    shell: Callable[[str], dict[str, Any]]  # a tool call running one command
    shell_tool: str
    command_of: Callable[[dict[str, Any]], str]  # the command back out of an ATIF tool call's arguments
    agent_kwargs: tuple[str, ...] = ()
    selected_as: str = ""  # the name given in --agents, --agent-model and --agent-kwarg, when not `name`

    def skill_md(self) -> str:
        return f"{self.skills_dir}/{SKILL}/SKILL.md"

    def greet(self) -> str:
        return f"cd /workspace && python3 {self.skills_dir}/{SKILL}/scripts/greet.py --name 'Ada Lovelace'"


def _codex_command(arguments: dict[str, Any]) -> str:
    cmd = arguments.get("cmd", arguments.get("command"))
    return " ".join(cmd) if isinstance(cmd, list) else str(cmd)


CODEX = CliAgent(
    name="codex",
    model="openai/scripted",
    queue="scripted",
    skills_dir="/root/.agents/skills",
    shell=lambda command: {"name": "exec_command", "arguments": {"cmd": command}},
    shell_tool="exec_command",
    command_of=_codex_command,
)
CLAUDE_CODE = CliAgent(
    name="claude-code",
    model="anthropic/claude-scripted",
    queue="claude-scripted",
    skills_dir="/logs/agent/sessions/skills",
    shell=lambda command: {"name": "Bash", "arguments": {"command": command, "description": "run it"}},
    shell_tool="Bash",
    command_of=lambda arguments: str(arguments.get("command")),
    # The alias `claude` in all three options: the model and the kwarg must reach claude-code's trials.
    selected_as="claude",
    agent_kwargs=("claude:disallowed_tools=Edit",),
)


OPENCODE = CliAgent(
    name="pytest_skilleval.harbor.preinstalled:PreinstalledOpenCode",
    model="scripted/m",
    queue="m",
    skills_dir="/root/.config/opencode/skills",
    shell=lambda command: {"name": "bash", "arguments": {"command": command, "description": "run it"}},
    shell_tool="bash",
    command_of=lambda arguments: str(arguments.get("command")),
)


def opencode_provider(base_url: str) -> str:
    """An OpenAI-compatible provider in opencode's own config (its `openai` provider speaks another API)."""
    config = {
        "provider": {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "scripted",
                "options": {"baseURL": base_url, "apiKey": "placeholder"},
                "models": {"m": {"name": "m"}},
            }
        }
    }
    return f"{OPENCODE.name}:opencode_config={json.dumps(config)}"


def script(agent: CliAgent, marker: str) -> dict:
    """Per arm and case: the tool calls to make, then a final answer. `marker` is text only with-skill requests hold."""

    def arm_case(needle: str, with_skill: bool, *commands: str) -> list[dict]:
        guard = regex_all(marker, needle) if with_skill else regex_all(needle, absent=(marker,))
        return [
            *({"match_regex": guard, "tool_calls": [agent.shell(command)]} for command in commands),
            {"match_regex": guard, "text": "Done.", "repeat": "forever"},
        ]

    # opencode asks the same model for a session title alongside the conversation: answer it first, always.
    title = {"match_regex": "(?i)generate a (short )?title|title generator", "text": "Greeting", "repeat": "forever"}
    return {
        "models": {
            agent.queue: [
                title,
                *arm_case(ADA, True, f"cat {agent.skill_md()}", agent.greet()),
                *arm_case(ADA, False, HAND_GREETING),
                *arm_case(ARITHMETIC, True, ANSWER),
                *arm_case(ARITHMETIC, False, ANSWER),
            ],
            # Side requests (titles, topic checks, a small fast model) get a plain answer and never take the above.
            "*": [{"text": "ok", "repeat": "forever"}],
        }
    }


def _needs_bwrap() -> None:
    from pytest_skilleval.harbor.local_env import bwrap_available

    if not bwrap_available():
        require_system("bubblewrap (bwrap) that can create namespaces", "apt-get install bubblewrap (or run .ci/run)")


def local_cli_args(agent: CliAgent, agent_clis: Any) -> tuple[str, ...]:
    """The run options for one CLI agent in the `local` environment under bwrap, its CLI from `agent_clis`."""
    return (
        *("--agents", agent.selected_as or agent.name),
        *("--agent-model", f"{agent.selected_as or agent.name}={agent.model}"),
        *("--env-mode", "local", "--ek", "sandbox=bwrap", "--ek", f"tools={agent_clis.prefix}"),
    )


def run_agent(
    agent: CliAgent,
    marker: str,
    skill_project: SkillProject,
    scripted_model,
    agent_clis,
    monkeypatch: pytest.MonkeyPatch,
    extra_kwargs: Callable[[Any], list[str]] = lambda server: [],
) -> Any:
    _needs_bwrap()
    server = scripted_model(script(agent, marker))
    for name, value in server.client_env().items():
        monkeypatch.setenv(name, value)
    skill_project.copy_hello_skill()
    kwargs = [arg for item in [*agent.agent_kwargs, *extra_kwargs(server)] for arg in ("--agent-kwarg", item)]
    skill_project.run(
        *local_cli_args(agent, agent_clis),
        *kwargs,
        "-k",
        f"{POSITIVE_CASE} or {NEGATIVE_CASE}",
    )
    return server


def check_run(agent: CliAgent, marker: str, server: Any, root) -> None:
    views = trials(root / "results")
    used = assert_arms_scored_as_scripted(views)
    commands = [agent.command_of(args) for name, args in used.tool_calls() if name == agent.shell_tool]
    assert any(agent.skill_md() in command for command in commands), commands
    assert any("greet.py" in command for command in commands), commands
    assert_baseline_never_saw_the_skill(views, server.requests, marker, (ADA, ARITHMETIC), model=agent.queue)


def test_codex_cli_on_the_demo_skill(
    skill_project: SkillProject, scripted_model, agent_clis, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"{SKILL}/SKILL.md"  # codex lists the installed skills, with their SKILL.md paths, in its context
    server = run_agent(CODEX, marker, skill_project, scripted_model, agent_clis, monkeypatch)
    check_run(CODEX, marker, server, skill_project.root)


def test_claude_code_cli_on_the_demo_skill(
    skill_project: SkillProject, scripted_model, agent_clis, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = "Writes a welcome greeting file"  # claude-code lists installed skills with their descriptions
    server = run_agent(CLAUDE_CODE, marker, skill_project, scripted_model, agent_clis, monkeypatch)
    check_run(CLAUDE_CODE, marker, server, skill_project.root)
    # The kwarg given under the alias reached the CLI: the tool it disallows is in no request's tool list.
    tools = {tool["name"] for entry in server.requests if entry.path == "/v1/messages" for tool in entry.body["tools"]}
    assert "Bash" in tools and "Edit" not in tools, sorted(tools)


def test_opencode_cli_on_the_demo_skill(
    skill_project: SkillProject, scripted_model, agent_clis, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = "Writes a welcome greeting file"  # opencode lists installed skills with their descriptions
    server = run_agent(
        OPENCODE,
        marker,
        skill_project,
        scripted_model,
        agent_clis,
        monkeypatch,
        extra_kwargs=lambda server: [opencode_provider(server.openai_base_url)],
    )
    check_run(OPENCODE, marker, server, skill_project.root)
