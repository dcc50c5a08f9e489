"""Selection: -k, -m, a single node id (as an IDE sends it) and --lf pick exactly the expected items."""

from __future__ import annotations

import pytest

from tests.support import SkillProject, simple_entries

ARGS = ("--agents", "replay,codex", "--env-mode", "local", "--skip-baseline")


def _selected(result: pytest.RunResult) -> list[str]:
    return sorted(line.split("::")[1].strip() for line in result.outlines if "::" in line)


@pytest.fixture
def project(skill_project: SkillProject) -> SkillProject:
    skill_project.make_skill("demo", simple_entries("alpha", "beta"))
    return skill_project


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("codex", ["alpha[codex-with_skill-1]", "beta[codex-with_skill-1]"]),
        ("alpha and replay", ["alpha[replay-with_skill-1]"]),
        ("with_skill and beta", ["beta[codex-with_skill-1]", "beta[replay-with_skill-1]"]),
    ],
)
def test_keyword_selection(project: SkillProject, expression: str, expected: list[str]) -> None:
    result = project.run("--collect-only", "-q", *ARGS, "-k", expression, subprocess=False)
    assert _selected(result) == expected


def test_without_skill_keyword_does_not_match_with_skill(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("alpha"))
    result = skill_project.run(
        "--collect-only", "-q", "--agents", "replay", "--env-mode", "local", "-k", "without_skill", subprocess=False
    )
    assert _selected(result) == ["alpha[replay-without_skill-1]"]


def test_marker_selection_with_keyword_arguments(project: SkillProject) -> None:
    result = project.run("--collect-only", "-q", *ARGS, "-m", "skilleval(agent='codex', case='beta')", subprocess=False)
    assert _selected(result) == ["beta[codex-with_skill-1]"]
    everything = project.run("--collect-only", "-q", *ARGS, "-m", "skilleval", subprocess=False)
    assert len(_selected(everything)) == 4


def test_single_node_id_runs_just_that_item(project: SkillProject) -> None:
    nodeid = "skills/demo/evals/evals.json::beta[replay-with_skill-1]"
    result = project.run(nodeid, "--agents", "replay", "--env-mode", "local", "-v")
    result.assert_outcomes(passed=1)
    assert nodeid in result.stdout.str()


def test_last_failed_reruns_exactly_the_failed_items(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("alpha", "beta"))
    grader = skill / "evals" / "grader.py"
    # beta fails (score 0.3), alpha passes.
    grader.write_text(
        "import json, os\nfrom pathlib import Path\n"
        "entry = json.loads(Path(os.environ['HARBOR_ENTRY_JSON']).read_text())\n"
        "score = 0.3 if entry['id'] == 'beta' else 1.0\n"
        "Path(os.environ['HARBOR_REWARD_JSON']).write_text(json.dumps({'overall': score}))\n"
    )
    base = ("--agents", "replay", "--env-mode", "local", "--skip-baseline", "--grading-mode", "custom_only")
    first = skill_project.pytester.runpytest_subprocess("--skill-eval", *base, "-v")
    first.assert_outcomes(passed=1, failed=1)
    rerun = skill_project.pytester.runpytest_subprocess("--skill-eval", *base, "--lf", "-v")
    rerun.assert_outcomes(failed=1)
    output = rerun.stdout.str()
    assert "evals.json::beta[replay-with_skill-1] FAILED" in output
    assert "alpha[replay-with_skill-1]" not in output


def test_two_skills_of_one_name_in_one_run_are_refused_before_anything_runs(skill_project: SkillProject) -> None:
    """Their staged copies and trial folders are named after the skill: one's agents could get the other's files."""
    import shutil

    first = skill_project.make_skill("demo", simple_entries("alpha"))
    second = skill_project.root / "other" / "demo"
    shutil.copytree(first, second)
    (second / "SKILL.md").write_text((first / "SKILL.md").read_text() + "\nAnother version.\n")
    result = skill_project.run(str(first), str(second), "--agents", "replay", "--env-mode", "local")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    message = result.stderr.str()
    assert "2 skills named 'demo' in one run" in message and str(second) in message
    assert not (skill_project.root / "results").exists()
    # Each alone still runs.
    skill_project.run(str(second), "--agents", "replay", "--env-mode", "local", "--skip-baseline").assert_outcomes(
        passed=1
    )
