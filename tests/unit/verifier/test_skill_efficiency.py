"""skill_efficiency: skip rules, routing (incl. group workspace mode), tool efficiency (facts 4)."""

from __future__ import annotations

import pytest

from tests.unit.verifier.skill_builders import (
    NO_EVIDENCE,
    SKILLS,
    SMOKE,
    bash,
    call,
    codex_shell,
    evidence,
    exec_command,
    oc_bash,
    oc_read,
    read,
    skill_tool,
)
from verifier.checks.skill_efficiency import check_routing, check_skill_efficiency, check_tool_efficiency
from verifier.evidence import NO_TRAJECTORY

API = {"expected_skill": "api-caller", "expected_script": "call_api.py"}


def routing(*calls, entry=API):
    return check_routing(evidence(*calls).tool_calls, entry)


# ---- 4.1 skips ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    [{"expected_skill": "demo", "should_trigger": False}, {}, {"expected_skill": None, "should_trigger": True}],
    ids=["negative", "unlabeled", "no-expected-skill"],
)
def test_skipped_cases_score_one(entry):
    result = check_skill_efficiency(evidence(bash("pip install x")), entry)
    assert result.score == 1.0 and result.details["message"] == "Skipped (negative or no expected_skill)"


def test_positive_without_calls_is_zero():
    assert check_skill_efficiency(evidence(), API).score == 0.0


def test_no_trajectory_is_zero():
    result = check_skill_efficiency(NO_EVIDENCE, API)
    assert result.score == 0.0 and result.details["error"] == NO_TRAJECTORY


# ---- 4.2 routing --------------------------------------------------------------------------------------------


def test_routing_native_read_correct():
    result = routing(read(f"{SKILLS}/api-caller/SKILL.md"))
    assert result["score"] == 1.0 and "correctly routed" in result["message"]
    assert result["reads"][0]["path"] == f"{SKILLS}/api-caller/SKILL.md"


def test_routing_native_read_wrong_skill():
    result = routing(read(f"{SKILLS}/other-skill/SKILL.md"))
    assert result["score"] == 0.0 and "wrong skill" in result["message"]
    assert result["wrong_reads"][0]["call_index"] == 0


def test_routing_alternate_only_scores_075():
    entry = {**API, "acceptable_skills": ["http-client"]}
    assert routing(read(f"{SKILLS}/http-client/SKILL.md"), entry=entry)["score"] == 0.75


def test_routing_read_not_in_alternates_is_wrong():
    entry = {**API, "acceptable_skills": ["rest-helper"]}
    assert routing(read(f"{SKILLS}/http-client/SKILL.md"), entry=entry)["score"] == 0.0


def test_routing_two_skills_one_wrong():
    assert routing(read(f"{SKILLS}/api-caller/SKILL.md"), read(f"{SKILLS}/calculator/SKILL.md"))["score"] == 0.0


def test_routing_group_workspace_allows_workspace_skills():
    entry = {**API, "skill_workspace_mode": "group", "workspace_skill_names": ["auth-helper"]}
    result = routing(read(f"{SKILLS}/api-caller/SKILL.md"), read(f"{SKILLS}/auth-helper/SKILL.md"), entry=entry)
    assert result["score"] == 1.0 and "auth-helper" in result["allowed_skills"]
    # The same reads in isolated mode: auth-helper is a wrong skill.
    assert routing(read(f"{SKILLS}/api-caller/SKILL.md"), read(f"{SKILLS}/auth-helper/SKILL.md"))["score"] == 0.0


def test_routing_unrelated_read_then_skill_read():
    assert routing(read("/workspace/input/data.csv"), read(f"{SKILLS}/api-caller/SKILL.md"))["score"] == 1.0


def test_routing_nothing_read():
    result = routing(bash("python call_api.py"))
    assert result["score"] == 0.0 and "did not read" in result["message"]


SMOKE_ENTRY = {"expected_skill": "sandbox-smoke"}


@pytest.mark.parametrize(
    "command",
    [
        f"cat {SMOKE}",
        f"sed -n '1,220p' {SMOKE}",
        f"head -n 220 {SMOKE}",
        f"p='{SMOKE}' && sed -n '1,220p' \"$p\"",
        f"cat /workspace/README.md && sed -n '1,220p' {SMOKE}",
    ],
)
def test_routing_shell_reads_pass(command):
    assert routing(bash(command, "name: sandbox-smoke"), entry=SMOKE_ENTRY)["score"] == 1.0


def test_routing_shell_read_of_other_skill_is_wrong():
    result = routing(
        bash("sed -n '1,50p' /runtime/skills/other-skill/SKILL.md", "name: other-skill"), entry=SMOKE_ENTRY
    )
    assert result["score"] == 0.0 and "wrong skill" in result["message"]


@pytest.mark.parametrize(
    "command",
    [
        "find /tmp/agent-home -name SKILL.md",
        "grep 'SKILL' /workspace/config.json",
        "sed -n '/SKILL/p' /workspace/config.json",
        "awk '/SKILL/ {print}' /workspace/config.json",
        f"grep -n 'name:' {SMOKE}",
        "sed -n '/SKILL.md/p' /workspace/config.json",
        "head -n 5 /workspace/notes-about-SKILL.md.txt",
        "cat > /workspace/skills/sandbox-smoke/SKILL.md",
        f"echo sed {SMOKE}",
    ],
)
def test_routing_non_reads_did_not_read(command):
    result = routing(bash(command, f"{SMOKE} sandbox-smoke"), entry=SMOKE_ENTRY)
    assert result["score"] == 0.0 and "did not read" in result["message"]


def test_routing_skill_tool():
    assert routing(skill_tool("api-caller"))["score"] == 1.0
    assert routing(skill_tool("calculator"))["score"] == 0.0


def test_routing_agent_shapes():
    assert routing(oc_read("/runtime/skills/api-caller/SKILL.md"))["score"] == 1.0
    assert routing(codex_shell(["bash", "-lc", "cat /harbor/skills/api-caller/SKILL.md"]))["score"] == 1.0
    assert routing(exec_command("cat ~/.agents/skills/api-caller/SKILL.md"))["score"] == 1.0


def test_routing_counts_only_loads_from_the_skills_folders():
    # A SKILL.md outside every skills folder (codex's bundled skills under its own home) is another skill, recorded
    # and not routed; a read that found no file is no load.
    bundled = exec_command("cat /installed-agent/codex-home/skills/.system/api-caller/SKILL.md", "name: api-caller")
    result = routing(bundled)
    assert result["score"] == 0.0 and result["other_skill_reads"][0]["path"].endswith(".system/api-caller/SKILL.md")
    failed = bash(f"cat {SKILLS}/api-caller/SKILL.md", f"cat: {SKILLS}/api-caller/SKILL.md: No such file or directory")
    assert routing(failed)["score"] == 0.0


# ---- 4.3 tool efficiency ------------------------------------------------------------------------------------


def test_tool_efficiency_read_and_script_are_productive():
    calls = evidence(read(f"{SKILLS}/api-caller/SKILL.md"), bash(f"python {SKILLS}/api-caller/scripts/call_api.py"))
    result = check_tool_efficiency(calls.tool_calls, API)
    assert result["score"] == 1.0 and result["productive"] == 2 and result["wasted"] == 0


def test_tool_efficiency_codex_shell_read():
    calls = evidence(exec_command(f"cat {SMOKE}"))
    assert check_tool_efficiency(calls.tool_calls, SMOKE_ENTRY)["score"] == 1.0


def test_tool_efficiency_wasted_calls():
    calls = evidence(
        bash("pip install numpy"),
        bash("python --version"),
        bash("which python"),
        call("Glob", pattern="*"),
        call("Grep", pattern="x"),
        call("TodoWrite", todos=[]),
        call("WebFetch", url="u"),
        bash("apt-get install -y jq"),
        oc_bash("npm install left-pad"),
        bash("brew install x"),
        bash("calc --help"),
    )
    result = check_tool_efficiency(calls.tool_calls, API)
    assert result["score"] == 0.0 and result["wasted"] == 11 and len(result["wasted_calls"]) == 5


def test_tool_efficiency_writes_edits_and_completion_calls_are_the_work():
    calls = evidence(
        call("Write", file_path="/workspace/out.txt", content="x"),
        call("Edit", file_path="/workspace/out.txt", old_string="x", new_string="y"),
        call("write", filePath="/workspace/b.txt", content="x"),
        call("str_replace_editor", command="create", path="/workspace/c.txt", file_text="x"),
        call("mark_task_complete"),
        call("finish", message="done"),
        call("TodoWrite", todos=[]),
    )
    result = check_tool_efficiency(calls.tool_calls, API)
    assert result["wasted"] == 1 and result["wasted_calls"][0]["tool"] == "TodoWrite", result


def test_tool_efficiency_expected_skill_read_beats_noise_markers():
    # A read that names the expected skill is productive even if its text has a noise marker.
    calls = evidence(read(f"{SKILLS}/api-caller/--help/SKILL.md"))
    assert check_tool_efficiency(calls.tool_calls, API)["score"] == 1.0


def test_tool_efficiency_empty():
    assert check_tool_efficiency([], API)["score"] == 1.0


# ---- composite examples (facts 4.3 table, expected skill calc, script calc.py) ---------------------------------

CALC = {"expected_skill": "calc", "expected_script": "calc.py", "evaluated_skill": "calc"}


@pytest.mark.parametrize(
    ("calls", "entry", "score"),
    [
        ([read(f"{SKILLS}/calc/SKILL.md"), bash("python calc.py 1+1")], CALC, 1.0),
        ([bash(f"cat {SKILLS}/calc/SKILL.md"), bash("python calc.py 1+1")], CALC, 1.0),
        ([bash("python calc.py 1+1")], CALC, 0.5),
        (
            [read(f"{SKILLS}/calculator/SKILL.md"), bash("python calc.py 1+1")],
            {**CALC, "acceptable_skills": ["calculator"]},
            0.875,
        ),
        ([read(f"{SKILLS}/other/SKILL.md"), bash("python calc.py 1+1")], CALC, 0.5),
        (
            [read(f"{SKILLS}/calc/SKILL.md"), bash("pip install numpy"), bash("python calc.py 1+1"), bash("ls")],
            CALC,
            0.875,
        ),
    ],
    ids=["read-then-run", "shell-read", "script-only", "alternate", "wrong-skill", "pip-install"],
)
def test_efficiency_examples(calls, entry, score):
    result = check_skill_efficiency(evidence(*calls), entry)
    assert result.score == score
    assert set(result.details) >= {"routing", "tool_efficiency"}
