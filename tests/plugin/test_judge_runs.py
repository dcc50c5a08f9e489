"""The judges in real plugin runs: examples/hello-skill, replay agent, local environment, judge model served by the
scripted model server (real HTTP on 127.0.0.1). All five dimensions score; a rerun is served from the judge cache
with no request at all; without a judge model the run says so once and the overall is partial, never PASS."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import LOCAL_REPLAY, SkillProject

MODEL = "judge-demo"
ACCURACY = json.dumps(
    {
        "criteria": {
            "SKILL_IDENTIFIED": True,
            "ACTION_CORRECT": True,
            "FACTUALLY_ACCURATE": True,
            "TASK_ADDRESSED": True,
            "ACTIONABLE": True,
        },
        "score": 1.0,
        "reason": "correct",
    }
)
GOAL = json.dumps(
    {"user_goal": "greet", "end_state": "greeting written", "achieved": True, "score": 1.0, "reason": "met"}
)


def _behavior_reply(count: int) -> str:
    results = [{"step": i, "passed": True, "reason": "seen"} for i in range(1, count + 1)]
    return json.dumps({"results": results, "score": 1.0, "summary": "all seen"})


def _script(model: str = MODEL) -> dict[str, Any]:
    """Every judge prompt of the hello-skill cases answered by `model`, for as many trials as come."""
    behaviors = [
        {"text": _behavior_reply(n), "match_regex": rf"Give exactly {n} results\.", "repeat": "forever"}
        for n in (1, 2, 3, 4)
    ]
    return {
        "models": {
            model: [
                {"text": ACCURACY, "match": "USER QUESTION:", "repeat": "forever"},
                {"text": GOAL, "match": "Infer the user's goal", "repeat": "forever"},
                *behaviors,
            ]
        }
    }


def _reward_details(project: SkillProject) -> list[dict[str, Any]]:
    trials = sorted((project.root / "results" / "hello-skill").glob("2*/*/*/trials/*.json"))
    return [json.loads(path.read_text())["rich_reward"]["details"] for path in trials]


def model_requests(server: Any) -> list[Any]:
    """The model requests a server saw: the run's credential check adds one catalog GET, which is no judge call."""
    return [r for r in server.requests if r.method == "POST"]


def _latest_result(project: SkillProject) -> dict[str, Any]:
    return project.result_json("hello-skill")


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch, scripted_model: Any) -> Any:
    server = scripted_model(_script())
    monkeypatch.setenv("SKILL_EVAL_LLM_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("SKILL_EVAL_LLM_API_KEY", "scripted-key-0000")
    for name in ("LLM_JUDGE_MODEL", "SKILL_EVAL_JUDGE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return server


@pytest.mark.slow
def test_demo_scores_all_five_dimensions_and_a_rerun_hits_the_cache(skill_project: SkillProject, judge_env: Any):
    skill_project.copy_hello_skill(cases=["explicit-greeting"])  # both arms: each judge asked for two verdicts
    first = skill_project.run(*LOCAL_REPLAY, "--judge-model", f"openai/{MODEL}")
    first.assert_outcomes(passed=2)
    assert "judges not configured" not in first.stdout.str()
    result = _latest_result(skill_project)
    for trial in result["trials"]:
        assert all(value is not None for value in trial["dimensions"].values()), trial
        assert trial["overall_basis"] == ["security", "correctness", "discoverability", "effectiveness", "efficiency"]
        assert trial["judge_models"]["accuracy"] == f"openai/{MODEL}"
    judge = result["run_config"]["judge"]
    assert judge["enabled"] and judge["model"] == f"openai/{MODEL}" and judge["source"] == "--judge-model"
    assert "scripted-key" not in json.dumps(result)
    calls = len(model_requests(judge_env))
    assert calls >= 3 and all(r.status == 200 for r in judge_env.requests)
    assert all(r.model == MODEL for r in model_requests(judge_env))
    details = _reward_details(skill_project)
    judged = [d[m] for d in details for m in ("accuracy", "goal_accuracy", "behavior_check") if not d[m].get("skipped")]
    fresh = [d for d in judged if not d["cached"]]
    # one request per fresh verdict (nothing retried); identical prompts (arms that did the same) share a verdict
    assert len(fresh) == calls and sum(d["judge_requests"] for d in judged) == calls
    assert all(d["judge_fallback_used"] is False for d in judged)
    assert all("omitted" in d for d in judged)

    second = skill_project.run(*LOCAL_REPLAY, "--judge-model", f"openai/{MODEL}")
    second.assert_outcomes(passed=2)
    assert len(model_requests(judge_env)) == calls  # the rerun made 0 judge requests
    rerun = [
        d[m]
        for d in _reward_details(skill_project)[len(details) :]
        for m in ("accuracy", "goal_accuracy", "behavior_check")
        if not d[m].get("skipped")
    ]
    assert len(rerun) == len(judged) and all(d["cached"] is True for d in rerun)
    assert {t["overall"] for t in _latest_result(skill_project)["trials"]} == {t["overall"] for t in result["trials"]}

    third = skill_project.run(*LOCAL_REPLAY, "--judge-model", f"openai/{MODEL}", "--judge-cache", "off")
    third.assert_outcomes(passed=2)
    assert len(model_requests(judge_env)) == calls + len(judged)  # cache off: every verdict asked for again


def test_without_a_judge_model_the_overall_is_partial_and_said_once(skill_project: SkillProject, judge_env: Any):
    skill_project.copy_hello_skill(cases=["explicit-greeting", "negative-arithmetic"])  # two trials, one banner
    run = skill_project.run(*LOCAL_REPLAY, "--skip-baseline")
    out = run.stdout.str()
    assert out.count("skilleval: LLM judge not configured") == 1  # the banner, once
    assert judge_env.requests == []
    result = _latest_result(skill_project)
    assert result["run_config"]["judge"]["enabled"] is False
    for trial in result["trials"]:
        assert trial["metrics"]["accuracy"] is None and trial["dimensions"]["correctness"] is None
        assert trial["overall_basis"] == ["security", "discoverability", "efficiency"]
    assert "Overall is partial: mean of 3 of 5 dimensions (NO SCORE: correctness, effectiveness)" in " ".join(
        line.strip() for line in out.splitlines()
    )
    assert result["verdict"] != "pass"
    details = _reward_details(skill_project)[0]
    assert details["accuracy"]["status"] == "not_configured"


def test_a_failing_judge_leaves_the_trial_unscored(
    skill_project: SkillProject, scripted_model: Any, monkeypatch: pytest.MonkeyPatch
):
    server = scripted_model({"models": {MODEL: [{"status": 500, "repeat": "forever"}]}})
    monkeypatch.setenv("SKILL_EVAL_LLM_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("SKILL_EVAL_LLM_API_KEY", "scripted-key-0000")
    monkeypatch.setenv("SKILL_EVAL_LLM_MAX_RETRIES", "1")
    monkeypatch.setenv("SKILL_EVAL_LLM_RETRY_BASE_DELAY", "0.01")
    skill_project.copy_hello_skill(cases=["explicit-greeting"])
    run = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--judge-model", f"openai/{MODEL}")
    run.assert_outcomes(errors=1)
    out = run.stdout.str()
    assert "judge failed: accuracy: openai/judge-demo: gave up after 2 request(s)" in out
    assert len(model_requests(server)) == 6  # three judges, each one request and one retry
    result = _latest_result(skill_project)
    trial = result["trials"][0]
    assert trial["status"] == "unscored" and trial["overall"] is None
    arm = result["agents"]["replay"]["with_skill"]
    assert arm["execution_status"] == "failed" and arm["overall"] is None and arm["metrics"]["security"] is None
    assert trial["reason"].startswith("judge failed: accuracy: openai/judge-demo: gave up after 2 request(s)")
    assert "scripted-key" not in json.dumps(trial)


def test_skilleval_grade_judges_and_regrades_from_the_cache(tmp_path, capsys, judge_env: Any):
    from tests.support import FIXTURES
    from verifier.grade import run_grade_command

    case = tmp_path / "case.json"
    case.write_text(
        json.dumps(
            {
                "id": "c",
                "prompt": "add 1 and 1",
                "expected_output": "`2`",
                "assertions": ["runs calc.py"],
                "expected_skill": "calc",
            }
        )
    )
    argv = [
        "--trajectory",
        str(FIXTURES / "trajectories" / "codex" / "trajectory.json"),
        "--case",
        str(case),
        "--judge-model",
        f"openai/{MODEL}",
        "--judge-cache-dir",
        str(tmp_path / "cache"),
    ]
    assert run_grade_command(argv) == 0
    graded = json.loads(capsys.readouterr().out)
    assert {m: graded["metrics"][m] for m in ("accuracy", "goal_accuracy", "behavior_check")} == {
        "accuracy": 1.0,
        "goal_accuracy": 1.0,
        "behavior_check": 1.0,
    }
    assert len(judge_env.requests) == 3
    assert run_grade_command(argv) == 0
    regraded = json.loads(capsys.readouterr().out)
    assert len(judge_env.requests) == 3 and regraded["metrics"] == graded["metrics"]
    assert regraded["details"]["accuracy"]["cached"] is True
