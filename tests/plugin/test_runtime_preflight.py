"""`--agent-runtime-preflight` (and `harbor.agent_runtime_preflight` in evals/config.yml): one real agent-only
trial per agent before the evaluation. A failure stops the run with the agent's own error, before any evaluation
trial, and the run folder's run_config.json keeps it under credential_validation.runtime_preflight."""

from __future__ import annotations

import json

import pytest

from tests.support import LOCAL_REPLAY, SkillProject


def _run_config(project: SkillProject) -> dict:
    (path,) = (project.root / "results" / "hello-skill").glob("2*/run_config.json")
    return json.loads(path.read_text())


def test_a_failing_agent_stops_the_run_with_its_own_error(skill_project: SkillProject):
    skill = skill_project.copy_hello_skill()
    (skill / "evals" / "replays" / "explicit-greeting.with-skill.json").unlink()  # the first case's recording
    run = skill_project.run(*LOCAL_REPLAY, "--agent-runtime-preflight", "--no-credential-check")
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    err = " ".join(run.stderr.str().split())
    assert "skilleval agent runtime preflight failed (no evaluation trial was started):" in err
    assert (
        "agent replay (hello-skill, case explicit-greeting): ReplayFileNotFoundError: no replay trajectory for case "
        "'explicit-greeting' (with_skill)" in err
    )
    assert "passed" not in run.stdout.str() and not list((skill_project.root / "results").rglob("trials/*.json"))
    (outcome,) = _run_config(skill_project)["credential_validation"]["runtime_preflight"]
    assert outcome["status"] == "failed" and outcome["agent"] == "replay" and outcome["case"] == "explicit-greeting"
    assert "ReplayFileNotFoundError" in outcome["error"]


def test_a_passing_preflight_from_config_yml_is_recorded_and_the_run_goes_on(skill_project: SkillProject):
    skill = skill_project.copy_hello_skill()
    (skill / "evals" / "config.yml").write_text("schema_version: 1\nharbor:\n  agent_runtime_preflight: true\n")
    run = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--max-cases", "1")
    run.assert_outcomes(passed=1)
    validation = skill_project.result_json("hello-skill")["run_config"]["credential_validation"]
    (outcome,) = validation["runtime_preflight"]
    assert outcome["status"] == "passed" and outcome["error"] is None and outcome["seconds"] > 0


def test_without_the_flag_no_preflight_runs(skill_project: SkillProject):
    skill = skill_project.copy_hello_skill()
    (skill / "evals" / "replays" / "explicit-greeting.with-skill.json").unlink()
    run = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "-k", "implicit")
    run.assert_outcomes(passed=1, deselected=3)
    assert "runtime_preflight" not in skill_project.result_json("hello-skill")["run_config"]["credential_validation"]
