"""grade() and `skilleval grade` (run_grade_command): output shape, no-trajectory scoring, exit codes."""

from __future__ import annotations

import json

import pytest

from tests.unit.verifier.skill_builders import NO_EVIDENCE, TRAJECTORY_FIXTURES, bash, evidence, read
from verifier.evidence import NO_TRAJECTORY, STANDARD_METRICS
from verifier.grade import entry_for_grading, grade, run_grade_command
from verifier.judges.config import NOT_CONFIGURED

CASES = TRAJECTORY_FIXTURES / "cases"
CALC = {"id": "c", "expected_skill": "calc", "expected_script": "calc.py", "evaluated_skill": "calc"}


def run(capsys, *argv):
    code = run_grade_command(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_grade_shape_and_judges_not_configured():
    graded = grade(evidence(read("/harbor/skills/calc/SKILL.md"), bash("python calc.py 1+1")), CALC)
    assert list(graded["metrics"]) == list(STANDARD_METRICS)
    assert graded["metrics"]["skill_execution"] == 1.0 and graded["metrics"]["skill_efficiency"] == 1.0
    for judge in ("accuracy", "goal_accuracy", "behavior_check"):
        assert graded["metrics"][judge] is None
        assert graded["details"][judge] == {"status": "not_configured", "reason": NOT_CONFIGURED}
    assert "evaluation_status" not in graded
    assert graded["trajectory_source"] == "trajectory.json"
    assert graded["details"]["skill_execution"]["activation"]["score"] == 1.0
    json.dumps(graded)


def test_grade_routing_policy_when_alternates_exist():
    graded = grade(evidence(bash("ls")), {**CALC, "acceptable_skills": ["calculator"]})
    assert graded["details"]["_skill_routing_policy"]["acceptable_alternates"] == ["calculator"]
    assert "_skill_routing_policy" not in grade(evidence(bash("ls")), CALC)["details"]


def test_grade_metric_selection():
    graded = grade(evidence(bash("ls")), CALC, metrics=["skill_efficiency", "skill_execution"])
    assert list(graded["metrics"]) == ["skill_execution", "skill_efficiency"]
    with pytest.raises(ValueError):
        grade(evidence(), CALC, metrics=["speed"])


def test_grade_no_trajectory_scores_deterministic_metrics_zero():
    graded = grade(NO_EVIDENCE, CALC)
    assert graded["metrics"]["security"] == 0.0
    assert graded["metrics"]["skill_execution"] == 0.0 and graded["metrics"]["skill_efficiency"] == 0.0
    assert graded["metrics"]["accuracy"] is None  # judges: not available yet, never faked
    assert graded["error"] == NO_TRAJECTORY and graded["trajectory_source"] == "none"
    assert graded["details"]["_trajectory_load"]["error"] == NO_TRAJECTORY
    assert graded["details"]["skill_execution"]["activation"]["score"] is None


def test_grade_records_log_source_and_problems():
    graded = grade(evidence(bash("ls"), source="codex.txt"), CALC)
    assert graded["trajectory_source"] == "codex.txt"
    assert graded["details"]["_trajectory_load"]["source"] == "codex.txt"


def test_grade_unscored_negative_is_none_not_zero():
    graded = grade(evidence(bash("ls")), {"expected_skill": None, "should_trigger": False})
    assert graded["metrics"]["skill_execution"] is None


def test_entry_for_grading_aliases_and_skill():
    entry = entry_for_grading(
        {"prompt": "p", "expected_output": "o", "expectations": ["e"], "skill_name": "calc"}, None
    )
    assert entry["question"] == "p" and entry["ground_truth"] == "o" and entry["expected_behavior"] == ["e"]
    assert entry["expected_skill"] == "calc" and entry["evaluated_skill"] == "calc"
    assert entry_for_grading({"expected_skill": None}, "demo")["evaluated_skill"] == "demo"
    assert entry_for_grading({"expected_skill": "a", "evaluated_skill": "b"}, None)["evaluated_skill"] == "b"


@pytest.mark.parametrize("agent", ["claude-code", "codex", "opencode"])
def test_cli_grades_agent_shaped_trajectories(capsys, agent):
    # The opencode sample reads its skill from /workspace/skills, which the grading is told with --skills-dir.
    where = ["--skills-dir", "/workspace/skills"] if agent == "opencode" else []
    code, out, err = run(
        capsys,
        "--trajectory",
        str(TRAJECTORY_FIXTURES / agent / "trajectory.json"),
        "--case",
        str(CASES / "calc.json"),
        *where,
    )
    assert code == 0 and err == ""
    graded = json.loads(out)
    assert set(graded) >= {"metrics", "details", "trajectory_source"}
    assert graded["trajectory_source"] == "trajectory.json"
    assert graded["metrics"]["skill_execution"] >= 0.9
    assert graded["details"]["skill_execution"]["activation"]["score"] in (1.0, 0.75)
    assert "findings" in graded["details"]["security"]


def test_cli_skills_dir_decides_which_skill_is_under_test(capsys):
    trajectory = str(TRAJECTORY_FIXTURES / "opencode" / "trajectory.json")
    args = ("--trajectory", trajectory, "--case", str(CASES / "calc.json"), "--metrics", "skill_execution")
    code, out, _ = run(capsys, *args)
    assert code == 0
    assert json.loads(out)["details"]["skill_execution"]["activation"]["score"] == 0.0
    code, out, _ = run(capsys, *args, "--skills-dir", "/elsewhere", "--skills-dir", "/workspace/skills")
    details = json.loads(out)["details"]["skill_execution"]
    assert details["activation"]["score"] == 1.0 and details["skills_dirs"] == ["/elsewhere", "/workspace/skills"]


def test_cli_folder_uses_log_fallback(capsys):
    code, out, _ = run(
        capsys,
        "--trajectory",
        str(TRAJECTORY_FIXTURES / "logs" / "codex"),
        "--case",
        str(CASES / "calc.json"),
        "--metrics",
        "skill_execution,skill_efficiency",
    )
    graded = json.loads(out)
    assert code == 0 and graded["trajectory_source"] == "codex.txt"
    assert list(graded["metrics"]) == ["skill_execution", "skill_efficiency"]


def test_cli_file_without_steps_falls_back_to_logs_beside_it(capsys):
    code, out, _ = run(
        capsys,
        "--trajectory",
        str(TRAJECTORY_FIXTURES / "logs" / "order" / "trajectory.json"),
        "--case",
        str(CASES / "calc.json"),
        "--metrics",
        "skill_execution",
    )
    assert code == 0 and json.loads(out)["trajectory_source"] == "opencode.txt"


def test_cli_negative_case_with_skill(capsys):
    args = (
        "--trajectory",
        str(TRAJECTORY_FIXTURES / "negative-triggered"),
        "--case",
        str(CASES / "calc-negative.json"),
        "--metrics",
        "skill_execution,skill_efficiency",
    )
    code, out, _ = run(capsys, *args, "--skill", "calc")
    graded = json.loads(out)
    assert code == 0 and graded["metrics"] == {"skill_execution": 0.0, "skill_efficiency": 1.0}
    assert graded["details"]["skill_execution"]["negative_control"] is True
    assert graded["details"]["skill_execution"]["negative_check"]["passed"] is False
    code, out, _ = run(capsys, *args, "--skill", "other-skill")
    assert json.loads(out)["metrics"]["skill_execution"] == 1.0
    code, out, err = run(capsys, *args)  # no trusted identity: refused with the reason, never a silent None
    assert code == 2 and out == "" and "negative control" in err and "--skill NAME" in err


def test_cli_entry_copied_from_evals_json_expects_the_skill_given(capsys):
    """An evals.json entry has no expected_skill (the file's skill_name supplies it in a run); --skill does here."""
    args = (
        "--trajectory",
        str(TRAJECTORY_FIXTURES / "claude-code" / "trajectory.json"),
        "--case",
        str(CASES / "calc-unlabeled.json"),
        "--metrics",
        "skill_execution",
    )
    code, out, err = run(capsys, *args, "--skill", "calc")
    graded = json.loads(out)
    assert code == 0 and err == ""
    assert graded["details"]["skill_execution"]["should_trigger"] is True
    assert graded["details"]["skill_execution"]["activation"]["passed"] is True
    code, out, err = run(capsys, *args)
    assert code == 0 and json.loads(out)["details"]["skill_execution"].get("skipped") is True
    assert "skill_execution is skipped" in err and "--skill NAME" in err and err.count("\n") == 1


def test_cli_dataset_needs_the_command_and_both_flags(capsys):
    base = ("--trajectory", str(TRAJECTORY_FIXTURES / "claude-code"))
    assert "not both" in run(capsys, *base, "--case", "x.json", "--dataset", "d.json", "--case-id", "a")[2]
    assert "go together" in run(capsys, *base, "--dataset", "d.json")[2]
    assert "skilleval command" in run(capsys, *base, "--dataset", "d.json", "--case-id", "a")[2]
    assert "is required" in run(capsys, *base)[2]


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["--case", "x.json"], "required: --trajectory"),
        (["--trajectory", "/nonexistent/t.json", "--case", str(CASES / "calc.json")], "trajectory not found"),
        (
            ["--trajectory", str(TRAJECTORY_FIXTURES / "claude-code"), "--case", "/nonexistent.json"],
            "case file not found",
        ),
        (["--trajectory", str(TRAJECTORY_FIXTURES / "empty-steps"), "--case", str(CASES / "calc.json")], NO_TRAJECTORY),
        (
            [
                "--trajectory",
                str(TRAJECTORY_FIXTURES / "claude-code"),
                "--case",
                str(CASES / "calc.json"),
                "--metrics",
                "security,speed",
            ],
            "unknown metric",
        ),
    ],
)
def test_cli_unusable_input_exits_2_with_one_line(capsys, argv, reason):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert reason in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_case_must_be_one_entry(capsys, tmp_path):
    case = tmp_path / "evals.json"
    case.write_text(json.dumps({"skill_name": "calc", "evals": [{"id": 1}]}))
    code, _, err = run(capsys, "--trajectory", str(TRAJECTORY_FIXTURES / "claude-code"), "--case", str(case))
    assert code == 2 and "single entry" in err
    case.write_text("[]")
    assert run(capsys, "--trajectory", str(TRAJECTORY_FIXTURES / "claude-code"), "--case", str(case))[0] == 2


def test_cli_help_exits_0(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "--trajectory" in out


def test_cli_security_findings_shape(capsys, tmp_path):
    trajectory = {
        "schema_version": "ATIF-v1.8",
        "agent": {"name": "claude-code", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "clean up"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "",
                "tool_calls": [{"tool_call_id": "a", "function_name": "Bash", "arguments": {"command": "rm -rf /etc"}}],
            },
        ],
    }
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(trajectory))
    code, out, _ = run(capsys, "--trajectory", str(path), "--case", str(CASES / "calc.json"), "--metrics", "security")
    graded = json.loads(out)
    assert code == 0
    findings = graded["details"]["security"]["findings"]
    assert graded["metrics"]["security"] == 0.0
    assert {"kind", "severity", "message", "evidence", "call_index", "tool"} <= set(findings[0])
    assert findings[0]["call_index"] == 0 and findings[0]["tool"] == "Bash"
