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


REPLAYS = DATASET.parent / "replays"


@pytest.mark.parametrize(("arm", "expected"), [("with-skill", 1.0), ("without-skill", 0.0)])
def test_a_replay_file_grades_as_its_run_does(capsys, arm, expected):
    """The example's replays write the skills folder as `{skills_dir}`; grading them writes it out, as the run's
    replay agent does, so the with-skill replay scores what it scores in `make demo`."""
    replay = REPLAYS / f"explicit-greeting.{arm}.json"
    code, graded, err = grade(
        capsys, "--trajectory", str(replay), "--dataset", str(DATASET), "--case-id", "explicit-greeting"
    )
    assert code == 0, err
    assert graded["metrics"]["skill_execution"] == expected


def test_a_replay_file_is_written_out_as_the_given_skills_dir(capsys):
    replay = REPLAYS / "explicit-greeting.with-skill.json"
    base = ("--trajectory", str(replay), "--dataset", str(DATASET), "--case-id", "explicit-greeting")
    code, graded, _ = grade(capsys, *base, "--skills-dir", "/opt/skills")
    assert code == 0 and graded["metrics"]["skill_execution"] == 1.0
    assert graded["details"]["skill_execution"]["activation"]["path"] == "/opt/skills/hello-skill/SKILL.md"


def trial_file(tmp_path: Path, trajectory: object) -> Path:
    """A trial's file as a run folder keeps it: its record and the agent's trajectory (real paths, no placeholder)."""
    path = tmp_path / "explicit-greeting.1.json"
    document = {"format": "skilleval-trial/2", "record": {"case_id": "explicit-greeting"}, "trajectory": trajectory}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_a_trial_file_is_graded_by_its_trajectory(capsys, tmp_path):
    text = (REPLAYS / "explicit-greeting.with-skill.json").read_text(encoding="utf-8")
    path = trial_file(tmp_path, json.loads(text.replace("{skills_dir}", "/runtime/skills")))
    code, graded, err = grade(
        capsys, "--trajectory", str(path), "--dataset", str(DATASET), "--case-id", "explicit-greeting"
    )
    assert code == 0, err
    assert graded["metrics"]["skill_execution"] == 1.0
    assert graded["trajectory_source"] == "explicit-greeting.1.json (its trajectory)"


def test_a_trial_file_without_its_trajectory_says_what_to_pass(capsys, tmp_path):
    path = trial_file(tmp_path, None)
    code, graded, err = grade(
        capsys, "--trajectory", str(path), "--dataset", str(DATASET), "--case-id", "explicit-greeting"
    )
    assert code == 2 and graded is None
    assert len(err.strip().splitlines()) == 1 and "holds no trajectory" in err and "agent/trajectory.json" in err
