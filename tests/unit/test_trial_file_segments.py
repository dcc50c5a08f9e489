"""A terminus-2 `linear_history` trial keeps every segment in its trial file: the stored trajectory is the chain as
one document, so a regrade, a replay (`skilleval trajectory --replay`) and the report see the commands typed after
a context summarization."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harbor.models.trajectories import Trajectory

from pytest_skilleval.authoring.cli import main
from pytest_skilleval.results.aggregate import aggregate
from pytest_skilleval.results.models import RunPlan
from pytest_skilleval.results.records import TrialKey, TrialRecord
from pytest_skilleval.results.tree import write_results_tree
from pytest_skilleval.results.trial_file import trial_file
from tests.support import FIXTURES
from verifier.checks.security import check_security
from verifier.trajectory import evidence_from_atif

LINEAR = FIXTURES / "trajectories" / "text-calls" / "terminus-2-linear-history"
RUN_ID = "20250102_030405_42_0123456789ab"
KEY = TrialKey("a", "terminus-2", "with_skill", 1)
JUNK = "rm -rf /workspace/junk\n"


def _harbor_trial(root: Path, link_segment: bool = False) -> Path:
    agent = root / "harbor" / "agent"
    agent.mkdir(parents=True)
    (agent / "trajectory.json").write_text((LINEAR / "trajectory.json").read_text())
    second = json.loads((LINEAR / "trajectory.cont-1.json").read_text())
    second["steps"][4]["message"] = json.dumps(
        {"analysis": "a", "plan": "p", "commands": [{"keystrokes": JUNK, "duration": 0.1}], "task_complete": False}
    )
    if link_segment:
        (root / "elsewhere.json").write_text(json.dumps(second))
        os.symlink(root / "elsewhere.json", agent / "trajectory.cont-1.json")
    else:
        (agent / "trajectory.cont-1.json").write_text(json.dumps(second))
    return agent.parent


def _stored(root: Path, harbor: Path) -> Path:
    record = TrialRecord(
        skill="s", case="a", agent="terminus-2", arm="with_skill", attempt=1, status="scored", overall=0.5,
        metrics={"security": 0.0}, trial_dir=str(harbor),
    )  # fmt: skip
    plan = RunPlan(skill="s", cases=["a"], agents=["terminus-2"], arms=["with_skill"])
    return trial_file(write_results_tree(aggregate([record], plan), [record], root / "out", RUN_ID), KEY)


def test_the_trial_file_keeps_every_segment(tmp_path: Path) -> None:
    path = _stored(tmp_path, _harbor_trial(tmp_path))
    stored = json.loads(path.read_text())["trajectory"]
    assert "continued_trajectory_ref" not in stored
    assert stored["extra"]["segments"] == ["trajectory.json", "trajectory.cont-1.json"]
    assert [step["step_id"] for step in stored["steps"]] == list(range(1, 14))
    assert check_security(evidence_from_atif(stored)).score == 0.0  # the rm typed after the summarization

    out = tmp_path / "replay.json"
    assert main(["trajectory", str(path), "--replay", "-o", str(out)]) == 0
    replay = Trajectory.model_validate_json(out.read_text())
    assert any(JUNK.strip() in str(step.message) for step in replay.steps)


def test_a_segment_that_is_a_link_is_not_kept(tmp_path: Path) -> None:
    stored = json.loads(_stored(tmp_path, _harbor_trial(tmp_path, link_segment=True)).read_text())["trajectory"]
    assert len(stored["steps"]) == 5
    assert JUNK.strip() not in json.dumps(stored)
