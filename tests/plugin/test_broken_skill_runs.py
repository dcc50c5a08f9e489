"""One broken skill is one collection error, and every other skill still runs (plain and under xdist): no
--continue-on-collection-errors needed, exit status 1. A user's own test file that fails to collect keeps pytest's
rule (the session stops), and a session stopped before any trial ran leaves no run folder and no resume advice."""

from __future__ import annotations

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, simple_entries

GOOD = simple_entries("fine")
RUN = (*LOCAL_REPLAY, "--skip-baseline", "-rE")
PROCESSES = pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["plain", "xdist"])


def _checked(result: pytest.RunResult) -> str:
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and "Traceback" not in output
    assert "--resume" not in output and "Execution: interrupted" not in output  # nothing to resume
    return output


def _run_folders(project: SkillProject, skill: str) -> list[str]:
    folder = project.root / "results" / skill
    return sorted(path.name for path in folder.iterdir()) if folder.is_dir() else []


@PROCESSES
@pytest.mark.parametrize("broken", ["bad-json", "config-mode", "strict-typo"])
def test_a_broken_skill_is_one_error_and_the_other_skill_runs(
    skill_project: SkillProject, xdist: tuple[str, ...], broken: str
) -> None:
    strict: tuple[str, ...] = ()
    if broken == "bad-json":
        skill_project.make_skill("broken", raw="{not json", dataset_name="evals.json")
        said = "broken/evals/evals.json: invalid JSON"
    elif broken == "config-mode":
        skill = skill_project.make_skill("broken", simple_entries("c1"))
        (skill / "evals" / "config.yml").write_text("schema_version: 1\\ngrading:\\n  mode: bogus\\n")
        said = "ERROR skills/broken/evals/config.yml"  # the file to fix, not the dataset beside it
    else:
        skill_project.make_skill("broken", simple_entries("c1", expected_skil="near miss"))
        strict, said = ("--strict",), "expected_skil"
    skill_project.make_skill("good", GOOD)
    result = skill_project.run(*RUN, *strict, *xdist)
    output = _checked(result)
    result.assert_outcomes(passed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    [error] = [line for line in output.splitlines() if line.startswith("ERROR skills/broken/evals/")]
    assert said in output, error
    if broken == "bad-json":  # the start line says why the skill plans nothing, not "0 trials planned"
        assert "skilleval: broken: no trials: evals/evals.json cannot be read" in output, output
        assert "broken: 0 trials planned" not in output
    assert "Interrupted" not in output and "errors during collection" not in output
    assert _run_folders(skill_project, "broken") == []
    assert len([name for name in _run_folders(skill_project, "good") if name != "latest"]) == 1
    assert skill_project.result_json("good")["execution_status"] == "succeeded"


@PROCESSES
def test_a_users_test_file_error_keeps_pytests_rule(skill_project: SkillProject, xdist: tuple[str, ...]) -> None:
    """Plain: pytest stops the session (nothing ran, no run folder, the summary says why). Under xdist, pytest-xdist's
    rule is unchanged too: its workers run what they collected."""
    skill_project.make_skill("broken", raw="{not json", dataset_name="evals.json")
    skill_project.make_skill("good", GOOD)
    skill_project.pytester.makepyfile(test_mine="def test_x(:\\n    pass\\n")
    result = skill_project.run(*RUN, "skills", "test_mine.py", *xdist)
    output = _checked(result)
    assert "ERROR test_mine.py" in output and "ERROR skills/broken/evals/evals.json" in output
    if xdist:
        result.assert_outcomes(passed=1, errors=2)
        return
    assert result.ret == pytest.ExitCode.INTERRUPTED and "Interrupted: 2 errors during collection" in output
    assert " passed" not in output
    assert _run_folders(skill_project, "good") == [] and _run_folders(skill_project, "broken") == []
    [line] = [line for line in output.splitlines() if "no trial ran" in line]
    assert "pytest stopped the session at collection (2 errors during collection" in line
    assert "--continue-on-collection-errors" in line
