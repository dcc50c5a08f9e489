"""Trigger trials in the run folder, as case trials are: each one's file (record, verdict, trajectory) under
`<run>/<agent>/triggers/`, listed in result.json and shown in report.html; `--resume` keeps the finished ones and
`--regrade` reads their verdict again from the stored trajectory, with no agent run; `--max-cost` counts them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.authoring.cli import main as skilleval
from tests.plugin.test_triggers import trigger_skill
from tests.support import LOCAL_REPLAY, SkillProject

# 6 queries (tests/plugin/test_triggers.py): greet-ada, greet-bob pass (loaded), greet-cy fails (the sibling took it),
# farewell passes, hello-world fails (a false trigger), arithmetic passes.
OUTCOMES = {"passed": 4, "failed": 2}


def _run_dir(project: SkillProject) -> Path:
    (run,) = sorted((project.root / "results" / "demo").glob("2*"))
    return run


def _trigger_file(run: Path, query: str) -> dict[str, Any]:
    return json.loads((run / "replay" / "triggers" / f"{query}.1.json").read_text())


def test_trigger_trials_are_written_listed_and_shown_like_case_trials(
    skill_project: SkillProject, capsys: pytest.CaptureFixture[str]
) -> None:
    trigger_skill(skill_project)
    skill_project.run(*LOCAL_REPLAY).assert_outcomes(**OUTCOMES)
    run = _run_dir(skill_project)
    stored = _trigger_file(run, "greet-ada")
    assert stored["record"]["query"] == "greet-ada" and stored["record"]["triggered"] is True
    assert stored["verdict"]["triggered"] is True and stored["verdict"]["trajectory_source"] == "trajectory.json"
    commands = [
        call["arguments"]["command"] for step in stored["trajectory"]["steps"] for call in step.get("tool_calls") or []
    ]
    assert any(command.endswith("/demo/SKILL.md") and command.startswith("cat ") for command in commands), commands
    assert _trigger_file(run, "greet-cy")["verdict"]["distractors_loaded"] == ["other"]

    trials = skill_project.result_json("demo")["triggering"]["replay"]["trials"]
    assert [(t["query"], t["attempt"], t["triggered"]) for t in trials] == [
        ("greet-ada", 1, True),
        ("greet-bob", 1, True),
        ("greet-cy", 1, False),
        ("farewell", 1, False),
        ("hello-world", 1, True),
        ("arithmetic", 1, False),
    ]
    assert all((run / t["file"]).is_file() for t in trials)
    assert trials[0]["file"] == "replay/triggers/greet-ada.1.json"

    report = (run / "report.html").read_text()
    assert "Trigger trials" in report and "replay/triggers/greet-ada.1.json" in report
    assert "/demo/SKILL.md" in report.split("Trigger trials", 1)[1]  # the trajectory's read, in the drill-down

    # `skilleval view` says what the session said of it, not "run failed; 0/0 trials run" of the cases it has none of
    capsys.readouterr()
    assert skilleval(["view", str(run)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"demo: trigger set only; results: {run / 'result.json'}\nReport: "), out
    assert "demo triggering (replay, 6 queries): precision" in out and "failed" not in out, out
    # and report.html and BENCHMARK.md: the trigger set, not a failed case run with every dimension NO SCORE
    assert '<div class="label" id="verdict-text">Trigger set only</div>' in report
    assert "run failed" not in report and "Dimensions" not in report and "Triggering: replay" in report
    card = (run / "BENCHMARK.md").read_text()
    assert "**Trigger set only**: no case trial ran." in card and "## Triggering (evals/triggers.json)" in card
    assert "failed" not in card.lower() and "Tier 3" not in card, card


def test_resume_keeps_finished_trigger_trials(skill_project: SkillProject) -> None:
    trigger_skill(skill_project)
    skill_project.run(*LOCAL_REPLAY, "-k", "greet-ada or farewell").assert_outcomes(passed=2)
    run = _run_dir(skill_project)
    kept = (run / "replay" / "triggers" / "greet-ada.1.json").read_bytes()
    first_dir = json.loads(kept)["trial_dir"]

    resumed = skill_project.run(*LOCAL_REPLAY, "--resume", "latest")
    resumed.assert_outcomes(**OUTCOMES)
    said = " ".join(resumed.stdout.str().split())
    assert "reuses 2 of 6 planned trigger trials, runs 4" in said
    assert "demo: 6 trigger trials planned (6 queries x 1 agent x 1 attempt)" in said
    # A trigger-only skill has no case trials: no line counts them (nor reuses "0 of 0" of them).
    assert "planned trials" not in said and "0 trials planned" not in said
    assert _run_dir(skill_project) == run  # the same run folder
    # Not run again: its file is the one the first session wrote (a rerun's trial folder is in the new basetemp).
    assert (run / "replay" / "triggers" / "greet-ada.1.json").read_bytes() == kept
    rerun_dir = _trigger_file(run, "greet-bob")["trial_dir"]
    assert Path(rerun_dir).parents[5] != Path(first_dir).parents[5], (rerun_dir, first_dir)
    triggering = skill_project.result_json("demo")["triggering"]["replay"]
    assert (triggering["precision"], triggering["recall"], triggering["accuracy"]) == (0.6667, 0.6667, 0.6667)
    assert [query["attempts"] for query in triggering["queries"]] == [1] * 6


def test_regrade_recomputes_trigger_verdicts_from_the_stored_trajectories(skill_project: SkillProject) -> None:
    trigger_skill(skill_project)
    skill_project.run(*LOCAL_REPLAY).assert_outcomes(**OUTCOMES)
    source = _run_dir(skill_project)
    original = skill_project.result_json("demo")["triggering"]["replay"]

    regraded = skill_project.run(*LOCAL_REPLAY, "--regrade", source.name)
    regraded.assert_outcomes(**OUTCOMES)
    runs = sorted((skill_project.root / "results" / "demo").glob("2*"))
    (again,) = [run for run in runs if run != source]
    result = json.loads((again / "result.json").read_text())
    assert result["run_config"]["regraded_from"] == source.name
    triggering = result["triggering"]["replay"]
    for name in ("precision", "recall", "accuracy", "missed", "false_triggers", "missed_to"):
        assert triggering[name] == original[name], name
    stored = _trigger_file(again, "greet-cy")
    assert stored["record"]["regraded_from"] == source.name
    assert stored["verdict"]["distractors_loaded"] == ["other"]  # computed again, from the stored trajectory
    assert "_regrade" in Path(stored["trial_dir"]).parts  # laid out from the stored file: no agent ran
    assert stored["trajectory"] == _trigger_file(source, "greet-cy")["trajectory"]


def test_trigger_items_run_under_max_cost(skill_project: SkillProject) -> None:
    """A budget counts a trigger trial's reported cost; a trial that reports none adds nothing and still runs."""
    trigger_skill(skill_project)
    result = skill_project.run(*LOCAL_REPLAY, "--max-cost", "1")
    result.assert_outcomes(**OUTCOMES)
    assert skill_project.result_json("demo")["triggering"]["replay"]["accuracy"] == 0.6667
