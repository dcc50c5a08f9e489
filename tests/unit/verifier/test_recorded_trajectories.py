"""Grading the trajectories real agents wrote (fixtures/trajectories/recorded/, see its README): both arms of each,
read as a run reads them (trajectory.json, the agent's log beside it), with hand-checked rewards.

With the skill installed, each agent loads it its own way and runs its script; in the baseline arm the same loads
and runs fail, and the baseline must score no activation.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.verifier.skill_builders import TRAJECTORY_FIXTURES
from verifier.grade import entry_for_grading, grade
from verifier.trajectory import load_evidence

RECORDED = TRAJECTORY_FIXTURES / "recorded"
DETERMINISTIC = ["security", "skill_execution", "skill_efficiency"]


def graded(agent: str, case: str, arm: str, skill: str = "hello-skill") -> dict[str, Any]:
    entry = entry_for_grading(json.loads((RECORDED / agent / case / "case.json").read_text()), skill)
    return grade(load_evidence(RECORDED / agent / case / arm), entry, DETERMINISTIC)


# (agent, case, arm): (security, skill_execution, skill_efficiency, how activation happened).
# Worked out by hand from each trajectory:
# - codex with the skill: the harness injected it (<skill> block from ~/.agents/skills: activation 1.0), the script
#   ran, SKILL.md came before the commands, nothing failed (its text says "an error (exit code 2)", which is no
#   failure): 1.0. Efficiency: routed to hello-skill, all four exec calls (the apply_patch one too) productive: 1.0.
# - claude-code: the Skill tool answered "Launching skill" (1.0); the slash command injected the base directory
#   (harness, 1.0); Write is the work: efficiency 1.0.
# - opencode: its `skill` tool failed (no ripgrep in the sandbox), its `read` of SKILL.md worked (native read, 1.0);
#   `write` and `edit` are the work: efficiency 1.0.
# - terminus-2: `cat` of SKILL.md in the terminal (shell read, capped at 0.75), the script ran, read came first,
#   nothing failed: (0.75 + 1 + 1 + 1) / 4 = 0.9375. Its two mark_task_complete calls are not waste: 1.0.
# - edit-files (no script expected; the greeting written with the agent's own file tools): codex's harness injection
#   and claude-code's Skill tool are the activation (1.0), no command failed that the skill caused: 1.0. Efficiency:
#   routed to hello-skill, and every call (apply_patch through exec_command; Write, Edit, the refused MultiEdit, all
#   writes) is productive: 1.0.
# - every baseline: every load failed, so activation is 0 and skill_execution 0.0; efficiency routes to nothing
#   (0.0) and spends every call on the task (1.0): 0.5.
EXPECTED = {
    ("codex", "load-and-run", "with_skill"): (1.0, 1.0, 1.0, "harness"),
    ("codex", "load-and-run", "without_skill"): (1.0, 0.0, 0.5, None),
    ("claude-code", "load-and-run", "with_skill"): (1.0, 1.0, 1.0, "Skill tool"),
    ("claude-code", "load-and-run", "without_skill"): (1.0, 0.0, 0.5, None),
    ("claude-code", "slash-command", "with_skill"): (1.0, 1.0, 1.0, "harness"),
    ("claude-code", "slash-command", "without_skill"): (1.0, 0.0, 0.5, None),
    ("codex", "edit-files", "with_skill"): (1.0, 1.0, 1.0, "harness"),
    ("codex", "edit-files", "without_skill"): (1.0, 0.0, 0.5, None),
    ("claude-code", "edit-files", "with_skill"): (1.0, 1.0, 1.0, "Skill tool"),
    ("claude-code", "edit-files", "without_skill"): (1.0, 0.0, 0.5, None),
    ("opencode", "load-and-run", "with_skill"): (1.0, 1.0, 1.0, "native read of SKILL.md"),
    ("opencode", "load-and-run", "without_skill"): (1.0, 0.0, 0.5, None),
    ("terminus-2", "load-and-run", "with_skill"): (1.0, 0.9375, 1.0, "shell read command"),
    ("terminus-2", "load-and-run", "without_skill"): (1.0, 0.0, 0.5, None),
}


def test_every_recording_has_its_expected_reward():
    recorded = {
        (path.parent.parent.name, path.parent.name, arm)
        for path in RECORDED.glob("*/*/case.json")
        for arm in ("with_skill", "without_skill")
    }
    assert recorded - {("codex", "bundled-skill", arm) for arm in ("with_skill", "without_skill")} == set(EXPECTED)


@pytest.mark.parametrize(("agent", "case", "arm"), sorted(EXPECTED), ids=["-".join(key) for key in sorted(EXPECTED)])
def test_recorded_trajectory_scores_as_checked_by_hand(agent, case, arm):
    security, execution, efficiency, via = EXPECTED[(agent, case, arm)]
    result = graded(agent, case, arm)
    assert result["metrics"] == {"security": security, "skill_execution": execution, "skill_efficiency": efficiency}
    details = result["details"]["skill_execution"]
    assert details["activation"].get("via") == via, details["activation"]
    assert details["activation"]["passed"] is (via is not None)
    assert details["invocation"]["used"] is (arm == "with_skill"), details["invocation"]


@pytest.mark.parametrize(
    ("agent", "case"), [("codex", "load-and-run"), ("claude-code", "slash-command")], ids=["codex $", "claude-code /"]
)
def test_a_skill_mention_in_the_prompt_is_not_activation(agent, case):
    """Both arms' prompts name the skill; only the with-skill arm's harness loaded it."""
    baseline = graded(agent, case, "without_skill")["details"]["skill_execution"]
    assert baseline["activation"]["score"] == 0.0
    assert graded(agent, case, "with_skill")["details"]["skill_execution"]["activation"]["via"] == "harness"


def test_claude_code_unknown_skill_is_no_activation():
    details = graded("claude-code", "load-and-run", "without_skill")["details"]["skill_execution"]
    assert details["activation"]["refused_skill_tool_calls"] == [{"call_index": 0, "skill": "hello-skill"}]
    assert "not there" in details["script_execution"]["message"]


@pytest.mark.parametrize("agent", ["codex", "terminus-2"])
def test_a_failed_cat_of_skill_md_is_no_activation(agent):
    details = graded(agent, "load-and-run", "without_skill")["details"]["skill_execution"]
    assert details["activation"]["score"] == 0.0
    assert details["activation"]["skill_md_reads"][0]["failed"] is True


def test_opencode_failed_read_is_taken_from_its_log():
    """Harbor's opencode converter drops a failed call's result; opencode.txt says the read found no file."""
    baseline = RECORDED / "opencode" / "load-and-run" / "without_skill"
    evidence = load_evidence(baseline)
    read = next(call for call in evidence.tool_calls if call.tool == "read")
    raw = json.loads((baseline / "trajectory.json").read_text())
    raw_read = next(c for s in raw["steps"] for c in s.get("tool_calls") or [] if c["function_name"] == "read")
    assert not any(
        r.get("source_call_id") == raw_read["tool_call_id"]
        for s in raw["steps"]
        for r in (s.get("observation") or {}).get("results", [])
    )
    assert "status=error" in read.observation and "File not found" in read.observation
    assert graded("opencode", "load-and-run", "without_skill")["details"]["skill_execution"]["activation"][
        "skill_md_reads"
    ][0]["failed"]


@pytest.mark.parametrize("arm", ["with_skill", "without_skill"])
def test_codex_bundled_skill_is_not_the_skill_under_test(arm):
    """codex 0.171 injects and reads its bundled skill-creator from its own home in both arms; a skill under test
    named skill-creator would live in ~/.agents/skills, so this is another skill, recorded as such."""
    result = graded("codex", "bundled-skill", arm, skill="skill-creator")
    execution = result["details"]["skill_execution"]
    assert result["metrics"]["skill_execution"] == 0.0 and execution["activation"]["score"] == 0.0
    assert execution["invocation"]["used"] is False
    assert execution["other_skills_loaded"] == [
        {
            "skill": "skill-creator",
            "path": "/installed-agent/codex-home/skills/.system/skill-creator/SKILL.md",
            "via": "codex injected the skill (<skill> block)",
        }
    ]
    assert execution["activation"]["skill_md_reads"][0]["outside_skills_dirs"] is True
    routing = result["details"]["skill_efficiency"]["routing"]
    assert routing["score"] == 0.0 and routing["other_skill_reads"][0]["path"].endswith(
        "/.system/skill-creator/SKILL.md"
    )


def test_skills_dir_names_the_bundled_folder_when_that_is_what_is_under_test():
    entry = entry_for_grading(json.loads((RECORDED / "codex" / "bundled-skill" / "case.json").read_text()), None)
    entry["skills_dirs"] = ["/installed-agent/codex-home/skills/.system"]
    result = grade(load_evidence(RECORDED / "codex" / "bundled-skill" / "without_skill"), entry, DETERMINISTIC)
    assert result["details"]["skill_execution"]["activation"]["via"] == "harness"


def test_reading_a_skill_md_that_says_error_is_not_a_failed_command():
    """codex's with-skill run: `cat SKILL.md` (whose text says "an empty name is an error (exit code 2)"), then
    later `cat` of the greeting; the read is no failure the next command corrected."""
    recovery = graded("codex", "load-and-run", "with_skill")["details"]["skill_execution"]["error_recovery"]
    assert recovery["score"] == 1.0 and recovery["failures"] == 0 and recovery["corrections"] == []


def test_terminus2_completion_calls_and_writes_are_not_waste():
    efficiency = graded("terminus-2", "load-and-run", "with_skill")["details"]["skill_efficiency"]["tool_efficiency"]
    assert efficiency == {
        "score": 1.0,
        "passed": True,
        "productive": 6,
        "wasted": 0,
        "total": 6,
        "wasted_calls": [],
    }


@pytest.mark.parametrize(("agent", "writes"), [("claude-code", ["Write"]), ("opencode", ["write", "edit"])])
def test_write_and_edit_tools_are_productive(agent, writes):
    result = graded(agent, "load-and-run", "with_skill")["details"]["skill_efficiency"]["tool_efficiency"]
    evidence = load_evidence(RECORDED / agent / "load-and-run" / "with_skill")
    assert [call.tool for call in evidence.tool_calls if call.tool in writes] == writes
    assert result["wasted"] == 0 and result["score"] == 1.0


@pytest.mark.parametrize("agent", ["codex", "claude-code"])
def test_efficiency_routing_counts_the_harness_load(agent):
    case = "load-and-run" if agent == "codex" else "slash-command"
    result = graded(agent, case, "with_skill")["details"]["skill_efficiency"]["routing"]
    assert result["score"] == 1.0 and result["reads"][0]["via"] == "harness"


def test_recordings_are_what_the_agents_wrote():
    """Each recorded trajectory names the agent and version that wrote it (not a hand-written shape)."""
    versions = {"codex": "0.171.0", "claude-code": "2.1.332", "opencode": "1.18.33"}
    for path in RECORDED.glob("*/*/*/trajectory.json"):
        agent = json.loads(path.read_text())["agent"]
        folder = path.parent.parent.parent.name
        assert agent["name"] == folder, path
        if folder in versions:
            assert agent["version"] == versions[folder], path
