"""Each grading mode's effect on item outcome and on result.json, and runner override through a conftest."""

from __future__ import annotations

import shutil

import pytest

from tests.support import FIXTURES, LOCAL_REPLAY, LOGGING_AGENT, SkillProject, simple_entries

STANDARD = ("security", "skill_execution", "skill_efficiency")

# A conftest whose runner returns a passing record for every trial (no Harbor run).
PASSING_RUNNER_CONFTEST = (
    "import pytest\n"
    "from pytest_skilleval.results.records import TrialRecord\n"
    "class FakeRunner:\n"
    "    def run(self, spec):\n"
    "        return TrialRecord(skill=spec.skill_name, skill_dir=str(spec.skill_dir), case=spec.case_id,\n"
    "                           agent=spec.agent, arm=spec.arm, attempt=spec.attempt, nodeid=spec.nodeid,\n"
    "                           status='scored', overall=0.9, passed=True)\n"
    "@pytest.fixture(scope='session')\n"
    "def skilleval_runner():\n"
    "    return FakeRunner()\n"
)


def _with_skill_trial(project: SkillProject) -> dict:
    return next(t for t in project.result_json("demo")["trials"] if t["arm"] == "with_skill")


@pytest.fixture
def low_grader_skill(skill_project: SkillProject) -> SkillProject:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    shutil.copy2(FIXTURES / "graders" / "scores_low.py", skill / "evals" / "grader.py")
    (skill / "evals" / "grader.py").write_text(
        (skill / "evals" / "grader.py").read_text().replace('{"overall": 0.3}', '{"overall": 0.3, "style": 0.2}')
    )
    return skill_project


def test_default_mode_ignores_the_grader(low_grader_skill: SkillProject) -> None:
    low_grader_skill.run(*LOCAL_REPLAY, "--skip-baseline", "--grading-mode", "default")
    trial = _with_skill_trial(low_grader_skill)
    assert trial["custom_metrics"] == {}
    assert all(trial["metrics"][name] is not None for name in STANDARD)
    assert trial["metrics"]["accuracy"] is None  # judges are not available: unscored, never 0.0


def test_default_plus_custom_adds_custom_metrics_beside_standard_scores(low_grader_skill: SkillProject) -> None:
    low_grader_skill.run(*LOCAL_REPLAY, "--skip-baseline", "--grading-mode", "default")
    standard_overall = _with_skill_trial(low_grader_skill)["overall"]
    shutil.rmtree(low_grader_skill.root / "results")
    low_grader_skill.run(*LOCAL_REPLAY, "--skip-baseline", "--grading-mode", "aces_plus_custom")
    trial = _with_skill_trial(low_grader_skill)
    assert trial["custom_metrics"] == {"style": 0.2}
    assert trial["overall"] == standard_overall  # the grader's 0.3 never replaces the standard score


def test_custom_only_uses_the_graders_overall_and_no_dimensions(low_grader_skill: SkillProject) -> None:
    result = low_grader_skill.run(*LOCAL_REPLAY, "--skip-baseline", "--grading-mode", "custom_only")
    result.assert_outcomes(failed=1)
    trial = _with_skill_trial(low_grader_skill)
    assert trial["overall"] == 0.3
    dims = low_grader_skill.result_json("demo")["agents"]["replay"]["with_skill"]["dimensions"]
    assert all(value is None for value in dims.values())
    assert "NO SCORE" in result.stdout.str()


def test_config_yml_sets_the_mode_and_the_flag_wins(low_grader_skill: SkillProject) -> None:
    config = low_grader_skill.root / "skills" / "demo" / "evals" / "config.yml"
    config.write_text("schema_version: 1\ngrading:\n  mode: custom_only\n")
    low_grader_skill.run(*LOCAL_REPLAY, "--skip-baseline").assert_outcomes(failed=1)
    assert _with_skill_trial(low_grader_skill)["overall"] == 0.3
    shutil.rmtree(low_grader_skill.root / "results")
    low_grader_skill.run(*LOCAL_REPLAY, "--skip-baseline", "--grading-mode", "default")
    assert _with_skill_trial(low_grader_skill)["custom_metrics"] == {}


def test_bad_config_yml_is_one_collection_error(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    (skill / "evals" / "config.yml").write_text("schema_version: 1\ngrading:\n  mode: whatever\n  extra: 1\n")
    skill_project.make_skill("other", simple_entries("c2"))
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, subprocess=False)
    output = result.stdout.str()
    assert "config.yml" in output and "Traceback" not in output
    assert "skills/other/evals/evals.json::c2[replay-with_skill-1]" in output


def test_reserved_metric_from_grader_is_an_item_error(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    (skill / "evals" / "grader.py").write_text(
        "import json, os\nfrom pathlib import Path\n"
        "Path(os.environ['HARBOR_REWARD_JSON']).write_text(json.dumps({'overall': 1.0, 'security': 1.0}))\n"
    )
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--grading-mode", "custom_only")
    result.assert_outcomes(errors=1)
    assert "reserved standard metric 'security'" in result.stdout.str()


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ({"overall": 1.0, " security": 1.0}, "reserved standard metric 'security' (written as ' security')"),
        ({"overall": 1.0, "OVERALL": 0.9}, "collides with the reserved field name 'overall'"),
    ],
)
def test_reserved_metric_padded_or_cased_is_an_item_error(
    skill_project: SkillProject, written: dict, said: str
) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    (skill / "evals" / "grader.py").write_text(
        "import json, os\nfrom pathlib import Path\n"
        f"Path(os.environ['HARBOR_REWARD_JSON']).write_text(json.dumps({written!r}))\n"
    )
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--grading-mode", "custom_only")
    result.assert_outcomes(errors=1)
    assert said in result.stdout.str()
    assert skill_project.result_json("demo")["trials"][0]["custom_metrics"] == {}


def test_conftest_can_override_the_runner(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    skill_project.pytester.makeconftest(PASSING_RUNNER_CONFTEST)
    result = skill_project.run(*LOCAL_REPLAY, "-v")
    result.assert_outcomes(passed=2)
    assert "PASSED (0.90)" in result.stdout.str()


def test_an_error_that_is_not_the_trials_is_reported_as_pytest_reports_it(skill_project: SkillProject) -> None:
    """The item's failure text is its own only for trial failures; anything else (here a plugin's hook raising in
    the call phase) is pytest's usual traceback, never an INTERNALERROR."""
    skill_project.make_skill("demo", simple_entries("c1"))
    skill_project.pytester.makeconftest(
        PASSING_RUNNER_CONFTEST
        + "@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n    raise RuntimeError('a plugin broke')\n"
    )
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline")
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    result.assert_outcomes(failed=1)
    assert "RuntimeError: a plugin broke" in output


MANY_METRICS_GRADER = """
import json, os
from pathlib import Path
case = json.loads(Path(os.environ["HARBOR_ENTRY_JSON"]).read_text())["id"]
Path(os.environ["HARBOR_REWARD_JSON"]).write_text(json.dumps({"overall": 1.0, **{f"{case}_m{i}": 1.0 for i in range(70)}}))
"""


def test_an_import_path_agent_is_held_to_the_custom_metric_name_limit(
    skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two cases with 70 metric names each exceed a condition's 128 distinct names: every trial of the condition
    becomes an error, for an agent given as `module:Class` as for a named one."""
    skill = skill_project.make_skill("demo", simple_entries("c1", "c2"))
    (skill / "evals" / "grader.py").write_text(MANY_METRICS_GRADER)
    skill_project.pytester.makepyfile(logging_agent=LOGGING_AGENT)
    monkeypatch.setenv("PYTHONPATH", str(skill_project.root))
    monkeypatch.setenv("SKILLEVAL_TEST_LOG", str(skill_project.root / "agent.log"))
    monkeypatch.setenv("SKILLEVAL_TEST_SLEEP", "0")
    agent = "logging_agent:LoggingAgent"
    result = skill_project.run(
        "--agents", agent, "--env-mode", "local", "--ek", "sandbox=none", "--grading-mode", "custom_only",
        "--skip-baseline",
    )  # fmt: skip
    trials = skill_project.result_json("demo")["trials"]
    assert [(t["agent"], t["status"]) for t in trials] == [(agent, "error")] * 2, result.stdout.str()
    assert {t["error"] for t in trials} == {"condition exceeded the custom metric name limit"}
    assert f"{agent} with_skill: condition has 140 distinct custom metric names" in result.stdout.str()
