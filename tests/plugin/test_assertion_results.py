"""Per-assertion results in real runs: examples/hello-skill's implicit-greeting case, replay agent, local
environment, behavior_check served by the scripted model server. The judge passes both assertions for the
with-skill trajectory and only the first for the baseline; result.json carries each assertion's pass rate per arm
over the attempts, report.html an assertion table per case and the judge's reason per assertion in each trial."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import LOCAL_REPLAY, SkillProject

MODEL = "judge-assertions"
ACCURACY = json.dumps(
    {
        "criteria": dict.fromkeys(
            ("SKILL_IDENTIFIED", "ACTION_CORRECT", "FACTUALLY_ACCURATE", "TASK_ADDRESSED", "ACTIONABLE"), True
        ),
        "score": 1.0,
        "reason": "correct",
    }
)
GOAL = json.dumps({"user_goal": "greet", "end_state": "done", "achieved": True, "score": 1.0, "reason": "met"})


def _behavior(second: bool, why: str) -> str:
    results = [
        {"step": 1, "passed": True, "reason": "the greeting request was recognised"},
        {"step": 2, "passed": second, "reason": why},
    ]
    return json.dumps({"results": results, "score": 0.5, "summary": "judged"})


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch, scripted_model: Any) -> Any:
    server = scripted_model(
        {
            "models": {
                MODEL: [
                    {"text": ACCURACY, "match": "USER QUESTION:", "repeat": "forever"},
                    {"text": GOAL, "match": "Infer the user's goal", "repeat": "forever"},
                    {
                        "text": _behavior(True, "greeting.txt holds the two lines"),
                        "match_regex": r"hello-skill/SKILL\.md",
                        "repeat": "forever",
                    },
                    {
                        "text": _behavior(False, "the file has one line, not the standard two"),
                        "match": "EXPECTED BEHAVIORS",
                        "repeat": "forever",
                    },
                ]
            }
        }
    )
    monkeypatch.setenv("SKILL_EVAL_LLM_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("SKILL_EVAL_LLM_API_KEY", "scripted-key-0000")
    for name in ("LLM_JUDGE_MODEL", "SKILL_EVAL_JUDGE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return server


def _one_case(project: SkillProject) -> Path:
    skill = project.copy_hello_skill()
    dataset = skill / "evals" / "evals.json"
    data = json.loads(dataset.read_text())
    data["evals"] = [e for e in data["evals"] if e["id"] == "implicit-greeting"]
    dataset.write_text(json.dumps(data))
    return skill


def test_each_assertion_has_its_pass_rate_per_arm_and_its_reason_per_trial(
    skill_project: SkillProject, judge: Any
) -> None:
    skill = _one_case(skill_project)
    texts = json.loads((skill / "evals" / "evals.json").read_text())["evals"][0]["assertions"]
    run = skill_project.run(*LOCAL_REPLAY, "--n-attempts", "2", "--judge-model", f"openai/{MODEL}")
    run.assert_outcomes(passed=4)
    result = skill_project.result_json("hello-skill")
    rows = result["agents"]["replay"]["assertions"]["implicit-greeting"]
    assert [(row["index"], row["text"]) for row in rows] == [(1, texts[0]), (2, texts[1])]
    assert rows[0]["with_skill"] == {"judged": 2, "passed": 2, "rate": 1.0}
    assert rows[0]["without_skill"] == {"judged": 2, "passed": 2, "rate": 1.0}
    assert rows[1]["with_skill"] == {"judged": 2, "passed": 2, "rate": 1.0}
    assert rows[1]["without_skill"] == {"judged": 2, "passed": 0, "rate": 0.0}
    assert result["correctness_unmeasured"] == []  # a judge measured every case

    report = next((skill_project.root / "results" / "hello-skill").glob("2*/report.html")).read_text()
    table = report[report.index('<table class="assertions" data-case="implicit-greeting">') :]
    table = table[: table.index("</table>")]
    assert "2. " + texts[1] in table and "0/2 (0.0000)" in table and "2/2 (1.0000)" in table
    drill = report[report.index('<table class="trial-assertions">') :]
    assert "the file has one line, not the standard two" in report
    assert "greeting.txt holds the two lines" in drill


def test_without_a_judge_no_assertion_is_reported_and_correctness_is_unmeasured(skill_project: SkillProject) -> None:
    skill = _one_case(skill_project)
    (skill / "evals" / "config.yml").unlink()  # default mode: the grader does not run
    dataset = skill / "evals" / "evals.json"
    data = json.loads(dataset.read_text())
    del data["evals"][0]["checks"]  # and with no checks, nothing measures correctness
    dataset.write_text(json.dumps(data))
    run = skill_project.run(*LOCAL_REPLAY, "--skip-baseline")
    run.assert_outcomes(passed=1)
    result = skill_project.result_json("hello-skill")
    assert result["agents"]["replay"]["assertions"] == {}
    assert result["correctness_unmeasured"] == ["implicit-greeting"]
    out = " ".join(line.strip() for line in run.outlines)
    assert "Correctness not measured for 1 case (implicit-greeting)" in out and "--judge-model" in out
    folder = next((skill_project.root / "results" / "hello-skill").glob("2*/"))
    assert "Correctness not measured for 1 case (implicit-greeting)" in (folder / "report.html").read_text()
    assert "Correctness not measured for 1 case (implicit-greeting)" in (folder / "BENCHMARK.md").read_text()
