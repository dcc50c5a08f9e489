"""The terminal summary of real runs: pytest's width, no rows that cannot score, the true verdict reason, the
gate's wording on a partial run, outcome words that agree with pytest's, and no Harbor DEBUG chatter."""

from __future__ import annotations

import re
import shutil

import pytest

from pytest_skilleval.authoring.validate import validate_skill
from tests.support import FIXTURES, LOCAL_REPLAY, SkillProject, simple_entries

STANDARD_ROWS = re.compile(
    r"^  (security|skill_execution|skill_efficiency|accuracy|goal_accuracy|behavior_check|"
    r"Security|Correctness|Discoverability|Effectiveness|Efficiency|Outcome\*)\s{2,}"
)


def summary_of(stdout: str) -> list[str]:
    """The lines of our section, from its header to pytest's closing line."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"^=+ skilleval: demo =+$", line))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("====="))
    return lines[start:end]


def flat(lines: list[str]) -> str:
    return "\n".join(lines).replace("\n    ", " ").replace("\n  ", " ")


@pytest.fixture
def low_scores(skill_project: SkillProject) -> SkillProject:
    """Two cases whose grader scores 0.3: every with-skill item FAILS, every baseline item PASSES in pytest."""
    skill = skill_project.make_skill("demo", simple_entries("c1", "c2"))
    shutil.copy2(FIXTURES / "graders" / "scores_low.py", skill / "evals" / "grader.py")
    return skill_project


def test_custom_only_at_80_columns(low_scores: SkillProject, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = low_scores.run(*LOCAL_REPLAY, "--grading-mode", "custom_only", "-v")
    result.assert_outcomes(failed=2, passed=2)
    out = result.stdout.str()
    lines = summary_of(out)
    assert len(lines[0]) == 80 and all(len(line) <= 80 for line in lines if "/results/demo/" not in line)
    # custom_only cannot score the standard rows: one line says so instead of eleven rows of NO SCORE
    assert not [line for line in lines if STANDARD_ROWS.match(line)]
    assert sum("NO SCORE" in line for line in lines) == 2
    text = flat(lines)
    assert "Verdict: NEUTRAL -- custom_only grading scores no dimensions, so the verdict cannot be PASS" in text
    # the baseline item pytest reported PASSED reads "passed" in the case table too, beside its 0/1
    assert re.search(r"demo/evals/evals.json::c1\[replay-without_skill-1\] PASSED", out)
    assert re.search(r"^  c1\s+without skill\s+0\.3000\s+0/1\s+1 passed$", "\n".join(lines), re.M)
    assert re.search(r"^  c1\s+with skill\s+0\.3000\s+0/1\s+1 failed$", "\n".join(lines), re.M)
    # it ends with the report and one next step: the with-skill cases that failed, first
    run_dir = next((low_scores.root / "results" / "demo").glob("2*"))
    step = next(i for i, line in enumerate(lines) if line.startswith("Next: "))
    assert lines[step - 2] == f"Report: {run_dir / 'report.html'}"
    assert flat(lines[step:]).startswith("Next: fix the cases no with-skill attempt passed: c1, c2 "), lines[step:]


def test_a_failing_items_output_has_no_harbor_debug_lines(low_scores: SkillProject) -> None:
    result = low_scores.run(*LOCAL_REPLAY, "--grading-mode", "custom_only", "--skip-baseline")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "overall 0.3000 < pass threshold 0.50" in out
    assert "DEBUG" not in out and "options_model" not in out and "Captured log" not in out
    # a level the user asks for still wins: then Harbor's debug lines are theirs to see
    loud = low_scores.run(*LOCAL_REPLAY, "--grading-mode", "custom_only", "--skip-baseline", "--log-level=DEBUG")
    assert "does not declare an options_model" in loud.stdout.str()


def test_a_k_run_is_incomplete_in_the_verdict_and_the_gate(
    skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "150")
    skill_project.make_skill("demo", simple_entries("c1", "c2", "c3"))
    result = skill_project.run(*LOCAL_REPLAY, "-k", "c1", "--block-on-agent-eval")
    result.assert_outcomes(passed=2, deselected=4)
    assert result.ret == 13
    lines = summary_of(result.stdout.str())
    assert len(lines[0]) == 150 and all(len(line) <= 150 for line in lines if "/results/demo/" not in line)
    text = flat(lines)
    # (the no-op replay never reads the skill: INCONCLUSIVE; what matters is that the reason leads with the selection)
    assert (
        "Verdict: INCONCLUSIVE -- publication-incomplete (partial selection: 2 case(s) not run); skill never "
        "activated for any agent" in text
    )
    assert (
        "--block-on-agent-eval: exit status 13: the run was incomplete (partial selection: 2 case(s) not run); "
        "the gate needs every planned case and attempt"
    ) in text
    assert "(verdict neutral)" not in text
    (next_at,) = [i for i, line in enumerate(lines) if line.startswith("Next: ")]
    run_id = (skill_project.root / "results" / "demo" / "latest").readlink().name
    assert flat(lines[next_at:]) == (
        f"Next: run every case for a publishable verdict: drop -k/-m/--max-cases, or add --resume {run_id} to run "
        "only the missing trials"
    )


def test_a_dataset_that_expects_another_skill_name_says_which_names_and_the_fix(skill_project: SkillProject) -> None:
    """The folder is `greeter`; evals.json still says `hello-skill`: the skill's use can never be seen."""
    skill = skill_project.copy_hello_skill("greeter")
    result = skill_project.run(*LOCAL_REPLAY)
    lines = result.stdout.str().splitlines()
    start = lines.index(next(line for line in lines if line.startswith("Next: ")))
    next_line = " ".join(" ".join(lines[start:]).split())  # the summary wraps at pytest's width
    assert "evals.json skill_name 'hello-skill' is not this skill's name (folder 'greeter', SKILL.md name " in next_line
    assert "set skill_name to 'greeter'" in next_line
    report = validate_skill(skill)
    warning = next(f for f in report.findings if f.rule == "skill-name-mismatch")
    assert warning.severity == "warning" and "set skill_name to 'greeter'" in warning.message


def test_a_flat_list_that_names_no_skill_says_its_skill_scores_measured_nothing(skill_project: SkillProject) -> None:
    """agent-skill-eval writes evals.json as a flat list with no skill_name: each case is unlabelled, so
    Discoverability and Efficiency score 1.0 in both arms without looking. The run and validate both say so."""
    rows = [
        {"id": "plain", "prompt": "check the title", "expected_output": "valid"},
        {"id": "control", "prompt": "sort a list", "expected_output": "sorted", "should_trigger": False},
    ]
    skill = skill_project.make_skill("pr-naming", rows)
    result = skill_project.run(*LOCAL_REPLAY)
    lines = result.stdout.str().splitlines()
    start = lines.index(next(line for line in lines if line.startswith("Next: ")))
    next_line = " ".join(" ".join(lines[start:]).split())
    assert "evals.json: 1 of 2 case(s) name no skill to look for (plain)" in next_line
    assert 'wrap the list as {"skill_name": "pr-naming", "evals": [...]}' in next_line
    trial = skill_project.result_json("pr-naming")["trials"][0]
    assert trial["metrics"]["skill_execution"] == 1.0  # the skipped score the line warns about
    report = validate_skill(skill)
    warning = next(f for f in report.findings if f.rule == "unnamed-skill-cases")
    assert warning.severity == "warning" and "1 of 2 case(s) name no skill to look for (plain):" in warning.message


def test_a_case_whose_trials_all_errored_is_not_scored_zero_nor_told_to_add_checks(
    skill_project: SkillProject,
) -> None:
    """c1 has checks but no replay, so its trial errors; c2 has no checks and scores. pass@k counts c1 as not
    passed (passed cases / expected cases) and the line under the rate says so, and why the estimators leave it
    out; the correctness line names c2 alone, never c1, whose checks exist but never ran."""
    checks = [{"type": "file_exists", "path": "output/x.txt"}]
    dataset = simple_entries("c1", "c2")
    dataset["evals"][0]["checks"] = checks
    skill = skill_project.make_skill("demo", dataset)
    (skill / "evals" / "replays" / "c1.json").unlink()
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline")
    result.assert_outcomes(errors=1, passed=1)
    text = flat(summary_of(result.stdout.str()))
    assert "with skill 0.5000 (1/2)" in " ".join(text.split())
    assert (
        "unbiased pass@k / pass^k: @1 1.0000/1.0000 (cases with k scored attempts: @1 1 of 2; the others are "
        "left out)" in " ".join(text.split())
    )
    assert "Correctness not measured for 1 case (c2)" in text
    doc = skill_project.result_json("demo")
    assert doc["correctness_unmeasured"] == ["c2"]

    # c1 alone: nothing scored. The rate is still 0/1 (SPEC: an unscored case has not passed), and the line says so.
    alone = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "-k", "c1")
    alone.assert_outcomes(errors=1, deselected=1)
    text = " ".join(flat(summary_of(alone.stdout.str())).split())
    assert "with skill 0.0000 (0/1)" in text
    assert (
        "with skill 0.0000 (0/1) 95% [0.0000, 0.7935] the case has no scored attempt (its trials errored or went "
        "unscored), so the rate counts it as not passed; unbiased pass@k / pass^k: N/A (they need k scored "
        "attempts per case)" in text
    )
    assert "left out of that k's estimators" not in text
    assert "Correctness not measured" not in text
    report = sorted((skill_project.root / "results" / "demo").glob("2*/report.html"))[-1].read_text()
    assert "with skill: the case has no scored attempt (its trials errored or went unscored)" in report
