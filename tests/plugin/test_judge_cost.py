"""The LLM judges' cost, apart from the agents': each answer priced by litellm's installed price map, summed per
trial and per arm, and shown in its own row of the Resources table; a cached verdict costs nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.plugin.test_judge_runs import ACCURACY, GOAL, _behavior_reply
from tests.support import LOCAL_REPLAY, SkillProject

USAGE = {"input_tokens": 1000, "output_tokens": 100}
PER_ANSWER = 1000 * 2.5e-6 + 100 * 10e-6  # gpt-4o in litellm's map: $2.50 in, $10 out per million tokens


def _script() -> dict[str, Any]:
    behaviors = [
        {"text": _behavior_reply(n), "match_regex": rf"Give exactly {n} results\.", "repeat": "forever", "usage": USAGE}
        for n in (1, 2, 3, 4)
    ]
    return {
        "models": {
            "gpt-4o": [
                {"text": ACCURACY, "match": "USER QUESTION:", "repeat": "forever", "usage": USAGE},
                {"text": GOAL, "match": "Infer the user's goal", "repeat": "forever", "usage": USAGE},
                *behaviors,
            ]
        }
    }


def test_judges_cost_is_reported_apart_from_the_agents(
    skill_project: SkillProject, scripted_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = scripted_model(_script())
    monkeypatch.setenv("SKILL_EVAL_LLM_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("SKILL_EVAL_LLM_API_KEY", "scripted-key-0000")
    for name in ("LLM_JUDGE_MODEL", "SKILL_EVAL_JUDGE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    skill_project.copy_hello_skill(cases=["explicit-greeting"])  # both arms, each judged
    result = skill_project.run(*LOCAL_REPLAY, "--judge-model", "openai/gpt-4o")
    run = next((skill_project.root / "results" / "hello-skill").glob("2*/result.json")).parent
    per_arm: dict[str, float] = {}
    agents: dict[str, float] = {}  # the replays' own recorded cost: the agents', kept apart
    for path in run.glob("*/*/trials/*.json"):
        trial = json.loads(path.read_text())
        record, details = trial["record"], trial["rich_reward"]["details"]
        # Each judge that answered (not served from the cache: an identical prompt earlier in the run) cost one answer.
        asked = [m for m, model in record["judge_models"].items() if model and not details[m]["cached"]]
        assert record["judge_cost_usd"] == pytest.approx(PER_ANSWER * len(asked)), record
        per_arm[record["arm"]] = per_arm.get(record["arm"], 0.0) + record["judge_cost_usd"]
        agents[record["arm"]] = agents.get(record["arm"], 0.0) + record["tokens"]["cost_usd"]
    document = json.loads((run / "result.json").read_text())
    resources = document["agents"]["replay"]["resources"]
    # result.json lists each trial's judges' cost beside its agent's (trials[]), as its trial file has it.
    listed = {trial["arm"]: trial["judge_cost_usd"] for trial in document["trials"]}
    assert listed == {arm: pytest.approx(cost) for arm, cost in per_arm.items()}
    assert per_arm["with_skill"] > 0
    for arm in ("with_skill", "without_skill"):
        assert resources[arm]["judge_cost_usd"] == round(per_arm[arm], 4)
        assert resources[arm]["cost_usd"] == round(agents[arm], 4)
    row = next(line for line in result.stdout.lines if line.strip().startswith("judges' cost (USD)"))
    assert f"{round(per_arm['with_skill'], 4):.4f}" in row, row
    # A rerun is served from the judge cache: no request, no cost.
    skill_project.run(*LOCAL_REPLAY, "--judge-model", "openai/gpt-4o")
    newest = sorted((skill_project.root / "results" / "hello-skill").glob("2*/result.json"))[-1]
    assert json.loads(newest.read_text())["agents"]["replay"]["resources"]["with_skill"]["judge_cost_usd"] == 0.0


def test_max_cost_counts_the_judges_cost_too(
    skill_project: SkillProject, scripted_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first trial's agent cost ($0.0078, its replay's figure) is under --max-cost $0.0088, but with its judges'
    answers it is over: no second trial starts, and the spend printed is agent plus judges."""
    server = scripted_model(_script())
    monkeypatch.setenv("SKILL_EVAL_LLM_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("SKILL_EVAL_LLM_API_KEY", "scripted-key-0000")
    for name in ("LLM_JUDGE_MODEL", "SKILL_EVAL_JUDGE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    skill_project.copy_hello_skill()
    result = skill_project.run(
        *LOCAL_REPLAY, "--judge-model", "openai/gpt-4o", "--n-concurrent", "1", "--max-cost", "0.0088", "-rs"
    )
    doc = skill_project.result_json("hello-skill")
    assert [t["status"] for t in doc["trials"] if t["status"] != "skipped"] == ["scored"], doc["trials"]
    run = next((skill_project.root / "results" / "hello-skill").glob("2*/result.json")).parent
    [record] = [json.loads(path.read_text())["record"] for path in run.glob("*/*/trials/*.json")]
    assert record["tokens"]["cost_usd"] == 0.0078 and record["judge_cost_usd"] > 0.001, record
    spent = record["tokens"]["cost_usd"] + record["judge_cost_usd"]
    assert f"budget reached: ${spent:.4f} spent of --max-cost $0.0088" in result.stdout.str(), result.stdout.str()
    assert doc["coverage"]["budget_stopped"] == f"${spent:.4f} of --max-cost $0.0088"
