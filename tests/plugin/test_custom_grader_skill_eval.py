"""Dogfooding: the shipped create-custom-grader skill is evaluated by the plugin itself, replay agent, local env.

Runs `pytest --skill-eval skills/create-custom-grader --agents replay --env-mode local` on a copy of the skill and
checks that the with-skill arm beats the baseline, for the reasons the skill's own grader states.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.support import LOCAL_REPLAY, REPO, SkillProject

SKILL = "create-custom-grader"
POSITIVE = ("rubric-task-json", "pytest-check", "shell-verifier")
NEGATIVE = "negative-plain-dataset"


def _grader_details(project: SkillProject, case: str, arm: str) -> dict[str, dict[str, Any]]:
    """The custom grader's per-metric {score, reason}: the results tree's trial file names the trial folder, whose
    verifier keeps the full reward (result.json and the tree's reward.json hold only the numbers); the run keeps
    those folders with --harbor-keep-jobs."""
    (run,) = (project.root / "results" / SKILL).glob("2*")
    trial = json.loads((run / "replay" / arm / "trials" / f"{case}.1.json").read_text())
    rich = Path(trial["trial_dir"]) / "verifier" / "skilleval_reward.json"
    return json.loads(rich.read_text())["details"]["custom"]["details"]


def test_the_skills_own_eval_passes_with_positive_lift_for_the_graders_reasons(skill_project: SkillProject) -> None:
    shutil.copytree(
        REPO / "skills" / SKILL,
        skill_project.root / "skills" / SKILL,
        ignore=shutil.ignore_patterns("results", "__pycache__"),
    )
    result = skill_project.run(f"skills/{SKILL}", *LOCAL_REPLAY, "--harbor-keep-jobs")  # the trial folders are read
    result.assert_outcomes(passed=8)
    report = skill_project.result_json(SKILL)
    agent = report["agents"]["replay"]
    assert report["grading_mode"] == "default_plus_custom"
    assert report["overall_lift"] > 0
    for metric in (
        "dataset_mapping",
        "grader_contract",
        "good_output_passes",
        "bad_output_fails",
        "mode_choice",
        "proof_stated",
    ):
        assert agent["custom_lift"][metric]["delta"] > 0, metric

    trials = {(t["case"], t["arm"]): t for t in report["trials"]}
    for case in POSITIVE:
        with_skill, baseline = trials[case, "with_skill"], trials[case, "without_skill"]
        assert set(with_skill["custom_metrics"].values()) == {1.0}, (case, with_skill["custom_metrics"])
        assert sum(baseline["custom_metrics"].values()) < sum(with_skill["custom_metrics"].values()), case
        contract = _grader_details(skill_project, case, "with_skill")["grader_contract"]
        assert contract["reason"] == "reward contract kept on both workspaces"

    reasons = {
        case: {name: d["reason"] for name, d in _grader_details(skill_project, case, "without_skill").items()}
        for case in POSITIVE
    }
    assert "'accuracy' is reserved" in reasons["rubric-task-json"]["grader_contract"]
    assert "files is '<omitted>'" in reasons["rubric-task-json"]["dataset_mapping"]
    assert reasons["pytest-check"]["mode_choice"].startswith("grading mode is default, the case calls for custom_only")
    assert reasons["pytest-check"]["bad_output_fails"] == "the bad workspace scored 1.0 (expected < 0.5)"
    assert "wrote no reward at $HARBOR_REWARD_JSON" in reasons["shell-verifier"]["grader_contract"]
    assert all("does not say what was left unvalidated" in r["proof_stated"] for r in reasons.values())

    for arm in ("with_skill", "without_skill"):
        negative = trials[NEGATIVE, arm]
        assert negative["negative_control"] and negative["metrics"]["skill_execution"] == 1.0
        assert negative["custom_metrics"] == {"dataset_entry_added": 1.0, "no_grader_written": 1.0}
