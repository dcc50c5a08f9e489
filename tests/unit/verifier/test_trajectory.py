"""Reading ATIF trajectories leniently into TrajectoryEvidence (facts 1), and the agent-log fallback order."""

from __future__ import annotations

import json
import shutil

from tests.unit.verifier.skill_builders import TRAJECTORY_FIXTURES
from verifier.evidence import NO_TRAJECTORY
from verifier.message_text import content_text
from verifier.trajectory import evidence_from_atif, load_evidence


def atif(*steps, **root):
    return {"schema_version": "ATIF-v1.8", "agent": {"name": "a", "version": "1"}, "steps": list(steps), **root}


def agent(step_id, message="", calls=(), results=()):
    step = {"step_id": step_id, "source": "agent", "message": message}
    if calls:
        step["tool_calls"] = list(calls)
    if results:
        step["observation"] = {"results": list(results)}
    return step


def test_content_parts_become_text_with_media_markers():
    parts = [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"media_type": "image/png", "path": "a.png"}},
        {"type": "audio", "source": {"media_type": "audio/wav", "path": "a.wav"}},
    ]
    assert content_text(parts) == "look\n[image]\n[audio]"
    assert content_text("plain") == "plain" and content_text(None) == ""


def test_tool_calls_messages_and_observation_matching():
    data = atif(
        {"step_id": 1, "source": "user", "message": "do it"},
        {"step_id": 2, "source": "system", "message": "system prompt"},
        agent(
            3,
            "working",
            calls=[
                {"tool_call_id": "a", "function_name": "Bash", "arguments": {"command": "ls"}},
                {"tool_call_id": "b", "function_name": "Read", "arguments": {"file_path": "/x"}},
            ],
            results=[
                {"source_call_id": "a", "content": "file1"},
                {"source_call_id": "b", "content": [{"type": "text", "text": "body"}]},
                {"content": "shared note"},
            ],
        ),
        agent(4, [{"type": "text", "text": "final answer"}]),
        agent(5, ""),
    )
    evidence = evidence_from_atif(data)
    assert evidence.source == "trajectory.json" and evidence.usable and evidence.problems == []
    assert [c.tool for c in evidence.tool_calls] == ["Bash", "Read"]
    assert [c.index for c in evidence.tool_calls] == [0, 1]
    # Results without a source_call_id attach to every call of the step.
    assert evidence.tool_calls[0].observation == "file1\nshared note"
    assert evidence.tool_calls[1].observation == "body\nshared note"
    assert evidence.tool_calls[0].step_id == 3 and evidence.tool_calls[0].call_id == "a"
    assert evidence.agent_messages == ["working", "final answer"]
    assert evidence.final_response == "final answer"
    assert evidence.user_messages == ["do it"]


def test_user_step_tool_calls_are_not_agent_actions():
    data = atif(
        {
            "step_id": 1,
            "source": "user",
            "message": "x",
            "tool_calls": [{"tool_call_id": "a", "function_name": "Bash", "arguments": {"command": "rm -rf /"}}],
        }
    )
    evidence = evidence_from_atif(data)
    assert evidence.tool_calls == [] and evidence.problems  # invalid, but read


def test_strictly_invalid_trajectory_is_read_and_problems_recorded():
    data = {
        "agent": {"name": "codex"},  # no version
        "steps": [
            {"step_id": 1, "source": "user", "message": "go"},
            {
                "step_id": 7,
                "source": "agent",
                "message": "",
                "unknown_key": 1,
                "tool_calls": [
                    {
                        "tool_call_id": "c",
                        "function_name": "exec_command",
                        "arguments": json.dumps({"cmd": "cat /runtime/skills/calc/SKILL.md"}),
                    }
                ],
                "observation": {"results": [{"source_call_id": "c", "content": "name: calc"}]},
            },
        ],
    }
    evidence = evidence_from_atif(json.dumps(data))
    assert evidence.usable
    assert evidence.tool_calls[0].arguments == {"cmd": "cat /runtime/skills/calc/SKILL.md"}
    assert evidence.tool_calls[0].observation == "name: calc"
    assert any("agent.version" in problem for problem in evidence.problems)


def test_odd_shapes_do_not_crash():
    data = atif(
        "not a step",
        agent(
            2,
            None,
            calls=[
                "nope",
                {"name": "bash", "input": {"command": "ls"}},
                {"function_name": "X", "arguments": "raw text"},
            ],
        ),
    )
    evidence = evidence_from_atif(data)
    assert [c.tool for c in evidence.tool_calls] == ["bash", "X"]
    assert evidence.tool_calls[0].arguments == {"command": "ls"}
    assert evidence.tool_calls[1].arguments == {"raw": "raw text"}
    assert any("not an object" in problem for problem in evidence.problems)


def test_no_steps_or_bad_json_is_unusable():
    for data in (atif(), "{not json", json.dumps([1, 2]), {"agent": {}}):
        evidence = evidence_from_atif(data)
        assert not evidence.usable and evidence.source == "none" and evidence.detail == NO_TRAJECTORY
        assert evidence.problems


def test_load_evidence_prefers_trajectory_json(tmp_path):
    shutil.copy(TRAJECTORY_FIXTURES / "claude-code" / "trajectory.json", tmp_path / "trajectory.json")
    shutil.copy(TRAJECTORY_FIXTURES / "logs" / "codex" / "codex.txt", tmp_path / "codex.txt")
    evidence = load_evidence(tmp_path)
    assert evidence.source == "trajectory.json"
    assert [c.tool for c in evidence.tool_calls] == ["Read", "Bash"]
    assert evidence.tool_calls[1].observation == "391\n[image]"


def test_load_evidence_explicit_path(tmp_path):
    target = tmp_path / "elsewhere.json"
    shutil.copy(TRAJECTORY_FIXTURES / "opencode" / "trajectory.json", target)
    evidence = load_evidence(tmp_path, target)
    assert evidence.source == "elsewhere.json" and len(evidence.tool_calls) == 3


def test_load_evidence_falls_back_in_order():
    # trajectory.json has no steps; claude-code.txt holds no JSON; opencode.txt comes before codex.txt.
    evidence = load_evidence(TRAJECTORY_FIXTURES / "logs" / "order")
    assert evidence.source == "opencode.txt"
    assert "trajectory.json has no steps" in evidence.problems
    assert "claude-code.txt has no reconstructible steps" in evidence.problems


def test_load_evidence_falls_back_on_invalid_json(tmp_path):
    (tmp_path / "trajectory.json").write_text("{truncated")
    shutil.copy(TRAJECTORY_FIXTURES / "logs" / "codex" / "codex.txt", tmp_path / "codex.txt")
    evidence = load_evidence(tmp_path)
    assert evidence.source == "codex.txt" and any("not valid JSON" in p for p in evidence.problems)


def test_load_evidence_nothing_usable(tmp_path):
    (tmp_path / "codex.txt").write_text("Error: 401 Unauthorized\n")
    evidence = load_evidence(tmp_path)
    assert not evidence.usable and evidence.detail == NO_TRAJECTORY
    assert evidence.problems == ["trajectory.json not found", "codex.txt has no reconstructible steps"]


def test_load_evidence_missing_folder(tmp_path):
    assert not load_evidence(tmp_path / "absent").usable


def test_fixture_trajectories_validate_or_report():
    for name in ("claude-code", "opencode", "negative-triggered"):
        assert load_evidence(TRAJECTORY_FIXTURES / name).problems == []
    assert load_evidence(TRAJECTORY_FIXTURES / "codex").problems
