"""`skilleval grade --dataset FILE --case-id ID` reads the case and the skill under test the way a run does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harbor.models.trajectories import Agent, Observation, ObservationResult, Step, ToolCall, Trajectory

from pytest_skilleval.authoring.grade_case import run_grade

REPO = Path(__file__).resolve().parents[2]
DATASET = REPO / "examples" / "hello-skill" / "evals" / "evals.json"


def terminus_trajectory(path: Path, keystrokes: str) -> Path:
    """One terminus-2 episode typing `keystrokes`, as Harbor's terminus-2 writes it."""
    call = ToolCall(
        tool_call_id="call_0_1", function_name="bash_command", arguments={"keystrokes": keystrokes, "duration": 0.1}
    )
    steps = [
        Step(step_id=1, source="user", message="Greet Ada."),
        Step(
            step_id=2,
            source="agent",
            message="reading",
            tool_calls=[call],
            observation=Observation(results=[ObservationResult(source_call_id="call_0_1", content="ok")]),
        ),
    ]
    trajectory = Trajectory(session_id="s", agent=Agent(name="terminus-2", version="2.0.0"), steps=steps)
    path.write_text(json.dumps(trajectory.model_dump(mode="json", exclude_none=True)), encoding="utf-8")
    return path


def grade(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = run_grade(list(argv))
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if captured.out else None), captured.err


@pytest.fixture
def read_skill(tmp_path: Path) -> Path:
    return terminus_trajectory(tmp_path / "trajectory.json", "cat /runtime/skills/hello-skill/SKILL.md\n")


def test_positive_case_expects_the_folder_skill(capsys, read_skill):
    code, graded, err = grade(
        capsys,
        "--trajectory",
        str(read_skill),
        "--dataset",
        str(DATASET),
        "--case-id",
        "explicit-greeting",
        "--metrics",
        "skill_execution",
    )
    assert code == 0 and err == ""
    details = graded["details"]["skill_execution"]
    assert details["should_trigger"] is True and details["activation"]["passed"] is True
    assert details["invocation"]["target"] == "hello-skill" and details["invocation"]["passed"] is True


def test_negative_control_is_scored_against_the_folder_skill(capsys, read_skill):
    code, graded, _ = grade(
        capsys,
        "--trajectory",
        str(read_skill),
        "--dataset",
        str(DATASET),
        "--case-id",
        "negative-arithmetic",
        "--metrics",
        "skill_execution",
    )
    assert code == 0 and graded["metrics"]["skill_execution"] == 0.0
    assert graded["details"]["skill_execution"]["negative_check"]["target"] == "hello-skill"


def test_dataset_outside_a_skill_folder_says_it_cannot_tell_the_skill(capsys, read_skill, tmp_path):
    loose = tmp_path / "evals.json"
    shutil.copy(DATASET, loose)
    code, graded, err = grade(
        capsys, "--trajectory", str(read_skill), "--dataset", str(loose), "--case-id", "negative-arithmetic"
    )
    assert code == 2 and graded is None
    assert "cannot tell the skill under test" in err and "no SKILL.md" in err and "--skill NAME" in err
    code, graded, _ = grade(
        capsys,
        "--trajectory",
        str(read_skill),
        "--dataset",
        str(loose),
        "--case-id",
        "negative-arithmetic",
        "--skill",
        "hello-skill",
    )
    assert code == 0 and graded["metrics"]["skill_execution"] == 0.0


def test_unknown_case_id_names_the_known_ones(capsys, read_skill):
    code, _, err = grade(capsys, "--trajectory", str(read_skill), "--dataset", str(DATASET), "--case-id", "nope")
    assert code == 2 and "no case with id 'nope'" in err and "explicit-greeting" in err
