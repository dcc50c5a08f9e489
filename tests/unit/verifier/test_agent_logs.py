"""Rebuilding a trajectory from each agent's own log (facts 1, seed 003 "The graded trajectory")."""

from __future__ import annotations

import json

import pytest

from tests.unit.verifier.skill_builders import TRAJECTORY_FIXTURES
from verifier.agent_logs import (
    AGENT_LOGS,
    convert_claude_code,
    convert_cline,
    convert_codex,
    convert_cursor_cli,
    convert_opencode,
    rebuild_steps,
)
from verifier.checks.skill_execution import check_skill_execution
from verifier.trajectory import load_evidence

LOGS = TRAJECTORY_FIXTURES / "logs"
# These sample logs put the skill under /workspace/skills, which no trial of ours installs into: the case says so,
# as `skilleval grade --skills-dir` would.
CALC = {
    "expected_skill": "calc",
    "expected_script": "calc.py",
    "evaluated_skill": "calc",
    "skills_dirs": ["/runtime/skills", "/harbor/skills", "/workspace/skills"],
}


def test_fallback_order_is_fixed():
    assert [name for name, _ in AGENT_LOGS] == [
        "claude-code.txt",
        "cursor-cli.txt",
        "cline.txt",
        "opencode.txt",
        "codex.txt",
    ]


@pytest.mark.parametrize(
    ("folder", "source", "tools"),
    [
        ("claude-code", "claude-code.txt", ["Skill", "Bash", "Bash"]),
        ("cursor-cli", "cursor-cli.txt", ["readToolCall", "shellToolCall"]),
        ("cline", "cline.txt", ["readFile", "execute_command"]),
        ("opencode", "opencode.txt", ["read", "bash", "bash"]),
        (
            "codex",
            "codex.txt",
            [
                "exec_command",
                "exec_command",
                "exec_command",
                "apply_patch",
                "mcp__docs__lookup",
                "web_search",
                "spawn_agent",
            ],
        ),
    ],
)
def test_each_log_rebuilds_a_gradable_trajectory(folder, source, tools):
    evidence = load_evidence(LOGS / folder)
    assert evidence.source == source
    assert [c.tool for c in evidence.tool_calls] == tools
    assert "391" in evidence.final_response
    result = check_skill_execution(evidence, CALC)
    assert result.details["activation"]["score"] in (1.0, 0.75)
    assert result.details["script_execution"]["score"] == 1.0


def test_claude_code_stream():
    evidence = load_evidence(LOGS / "claude-code")
    skill, failed, fixed = evidence.tool_calls
    assert skill.arguments == {"skill": "calc"} and skill.observation == "Launching skill: calc"
    assert failed.observation.startswith("status=error\nExit code 2")
    assert fixed.observation == "391"
    # The final `result` repeats the last message; it is not added twice.
    assert evidence.agent_messages == ["Using the calc skill.", "The answer is 391."]


def test_claude_code_user_text_and_result_only():
    steps = convert_claude_code(
        "\n".join(
            [
                json.dumps({"type": "user", "message": {"role": "user", "content": "hello"}}),
                json.dumps({"type": "result", "result": "hi there"}),
            ]
        )
    )
    assert [(s["source"], s["message"]) for s in steps] == [("user", "hello"), ("agent", "hi there")]


def test_cursor_tool_results_keep_status():
    evidence = load_evidence(LOGS / "cursor-cli")
    read, shell = evidence.tool_calls
    assert read.arguments == {"path": "/workspace/skills/calc/SKILL.md"}
    assert shell.observation.startswith("status=completed exit_code=0")
    assert evidence.user_messages and evidence.agent_messages[0] == "Reading the skill."
    failed = convert_cursor_cli(
        json.dumps(
            {
                "type": "tool_call",
                "subtype": "completed",
                "call_id": "k",
                "model_call_id": "m",
                "tool_call": {"shellToolCall": {"args": {"command": "false"}, "result": {"failure": {"exitCode": 1}}}},
            }
        )
    )
    assert failed[0]["observation"]["results"][0]["content"].startswith("status=failed exit_code=1")


def test_cline_messages_commands_and_partials():
    evidence = load_evidence(LOGS / "cline")
    read, command = evidence.tool_calls
    assert read.arguments["path"] == "/workspace/skills/calc/SKILL.md"
    assert command.arguments == {"command": "python /workspace/skills/calc/scripts/calc.py 17*23"}
    assert command.observation == "391"
    assert "partial..." not in evidence.agent_text
    assert evidence.final_response == "The answer is 391."


def test_cline_mcp_and_errors():
    steps = convert_cline(
        "\n".join(
            json.dumps(e)
            for e in [
                {
                    "type": "say",
                    "say": "use_mcp_server",
                    "text": json.dumps(
                        {"serverName": "fs", "toolName": "read_file", "arguments": json.dumps({"path": "/x/SKILL.md"})}
                    ),
                },
                {"type": "say", "say": "mcp_server_response", "text": "content"},
                {"type": "say", "say": "command", "text": "make"},
                {"type": "say", "say": "error", "text": "make: *** No rule"},
            ]
        )
    )
    calls = [c for s in steps for c in s.get("tool_calls", [])]
    assert [c["function_name"] for c in calls] == ["mcp__fs__read_file", "execute_command"]
    assert calls[0]["arguments"] == {"path": "/x/SKILL.md"}
    assert steps[1]["observation"]["results"][0]["content"] == "status=error\nmake: *** No rule"


def test_opencode_keeps_status_exit_code_and_error():
    evidence = load_evidence(LOGS / "opencode")
    read, failed, fixed = evidence.tool_calls
    assert read.arguments == {"filePath": "/workspace/skills/calc/SKILL.md"}
    assert failed.observation == "status=error exit_code=2\nerror: python: can't open file 'calc.py'"
    assert fixed.observation.startswith("status=completed exit_code=0\n391")
    # The running tool event is not a finished call.
    assert all(c.call_id != "b0" for c in evidence.tool_calls)
    assert evidence.agent_messages == ["Reading the calc skill.", "The answer is 391."]
    assert evidence.user_messages[0].startswith("Compute 17 * 23")


def test_opencode_events_outside_steps():
    steps = convert_opencode(
        json.dumps(
            {
                "type": "tool_use",
                "part": {
                    "type": "tool",
                    "tool": "bash",
                    "callID": "x",
                    "state": {"status": "completed", "input": {"command": "ls"}, "output": "a"},
                },
            }
        )
    )
    assert steps[0]["tool_calls"][0]["function_name"] == "bash"


def test_codex_items():
    evidence = load_evidence(LOGS / "codex")
    read, failed, fixed, patch, mcp, search, collab = evidence.tool_calls
    assert read.arguments == {"command": "bash -lc 'cat /runtime/skills/calc/SKILL.md'"}
    assert failed.observation.startswith("status=failed exit_code=2")
    assert patch.arguments["path"] == "/workspace/output/answer.txt"
    assert mcp.arguments == {"q": "calc"} and "doc text" in mcp.observation
    assert search.arguments == {"query": "calc skill", "action": {"type": "open_page", "url": "https://example.com"}}
    assert collab.arguments["prompt"] == "check"
    # Reasoning and started items are not calls or messages.
    assert evidence.agent_messages == ["The answer is 391."]
    recovery = check_skill_execution(evidence, CALC).details["error_recovery"]
    assert recovery["corrections"][0]["failed_call_index"] == 1


def test_codex_legacy_item_type_and_failed_mcp():
    steps = convert_codex(
        "\n".join(
            json.dumps(e)
            for e in [
                {"type": "item.completed", "item": {"id": "1", "item_type": "assistant_message", "text": "hi"}},
                {
                    "type": "item.completed",
                    "item": {
                        "id": "2",
                        "type": "mcp_tool_call",
                        "server": "s",
                        "tool": "t",
                        "arguments": {},
                        "error": {"message": "boom"},
                        "status": "failed",
                    },
                },
            ]
        )
    )
    assert steps[0]["message"] == "hi"
    assert steps[1]["observation"]["results"][0]["content"] == "status=failed\nerror: boom"


@pytest.mark.parametrize(
    "convert", [convert_claude_code, convert_cursor_cli, convert_cline, convert_opencode, convert_codex]
)
def test_converters_ignore_noise(convert):
    assert convert("") == []
    assert convert("plain text\n{broken json\n[1,2]\n") == []


def test_rebuild_steps_reports_empty_logs(tmp_path):
    (tmp_path / "cline.txt").write_text("__CLINE_EXIT=1\n")
    assert rebuild_steps(tmp_path) == (None, [], ["cline.txt has no reconstructible steps"])
