"""A real run's folder explains itself: report.html, BENCHMARK.md, and per trial the rich reward and the grader's
output; `skilleval view` finds the run again."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import LOCAL_REPLAY, SkillProject


def test_run_folder_has_report_card_and_trial_explanations(skill_project: SkillProject) -> None:
    skill = skill_project.copy_hello_skill()
    result = skill_project.run(str(skill), *LOCAL_REPLAY, "-k", "explicit-greeting or negative-arithmetic")
    result.assert_outcomes(passed=4)
    run_dir = (skill_project.root / "results" / "hello-skill" / "latest").resolve()
    result.stdout.fnmatch_lines([f"Report: {run_dir / 'report.html'}", f"Card:   {run_dir / 'BENCHMARK.md'}"])

    trial = json.loads((run_dir / "replay" / "with_skill" / "trials" / "explicit-greeting.1.json").read_text())
    rich = trial["rich_reward"]
    assert rich["details"]["skill_execution"]["activation"]["matched_skill"] == "hello-skill"
    assert rich["details"]["security"]["findings"] == [] and rich["custom_metrics"]["greeting_correct"] == 1.0
    assert "greeting_correct" in trial["grader_output"]
    assert trial["artifacts"]["rich_reward"] == "verifier/skilleval_reward.json"
    assert trial["record"]["case"] == "explicit-greeting" and trial["trajectory"]["steps"]

    html = (run_dir / "report.html").read_text()
    assert "Verdict: NEUTRAL (INCOMPLETE" in html  # a -k selection cannot back a published verdict
    assert html.count('class="case-row"') == 2
    card = (run_dir / "BENCHMARK.md").read_text()
    assert "| Tier 3: live agent evaluation | INCOMPLETE" in card

    live = (run_dir / "report.html").read_bytes()  # drawn from the trial files' bytes the session held
    (run_dir / "report.html").unlink()
    # As a user runs it, in a process of its own: run in this one, it left later in-process pytest runs of this
    # worker without the plugin's options.
    view = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_skilleval.authoring.cli",
            "view",
            str(skill_project.root / "results" / "hello-skill"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert view.returncode == 0, view.stderr
    out = view.stdout
    assert "skilleval: hello-skill" in out and f"Report: {run_dir / 'report.html'}" in out
    assert (run_dir / "report.html").read_bytes() == live  # the same report, read back from the run folder alone
