"""Builders for the verifier tests: tool calls and evidence shaped like Claude Code, Codex and OpenCode write them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verifier.evidence import ToolCallRecord, TrajectoryEvidence

REPO = Path(__file__).resolve().parents[3]
TRAJECTORY_FIXTURES = REPO / "fixtures" / "trajectories"

SMOKE = "/root/.agents/skills/sandbox-smoke/SKILL.md"
SKILLS = "/runtime/skills"


def call(tool: str, observation: str = "", **arguments: Any) -> tuple[str, dict[str, Any], str]:
    return tool, arguments, observation


def evidence(*calls: tuple[str, dict[str, Any], str], source: str = "trajectory.json") -> TrajectoryEvidence:
    records = [
        ToolCallRecord(index=i, step_id=i + 2, tool=tool, arguments=args, observation=obs, call_id=f"c{i}")
        for i, (tool, args, obs) in enumerate(calls)
    ]
    return TrajectoryEvidence(source=source, tool_calls=records, agent_messages=["done"], user_messages=["task"])


# Claude Code names.
def read(path: str, observation: str = "") -> tuple[str, dict[str, Any], str]:
    return call("Read", observation, file_path=path)


def bash(command: str, observation: str = "") -> tuple[str, dict[str, Any], str]:
    return call("Bash", observation, command=command)


def skill_tool(name: str) -> tuple[str, dict[str, Any], str]:
    return call("Skill", "Launching skill", skill=name)


# Codex names.
def exec_command(cmd: str, observation: str = "") -> tuple[str, dict[str, Any], str]:
    return call("exec_command", observation, cmd=cmd)


def codex_shell(argv: list[str], observation: str = "") -> tuple[str, dict[str, Any], str]:
    return call("shell", observation, command=argv)


# OpenCode names.
def oc_read(path: str, observation: str = "") -> tuple[str, dict[str, Any], str]:
    return call("read", observation, filePath=path)


def oc_bash(command: str, observation: str = "") -> tuple[str, dict[str, Any], str]:
    return call("bash", observation, command=command, description="run")


NO_EVIDENCE = TrajectoryEvidence(source="none", detail="No trajectory or reconstructible agent log")
