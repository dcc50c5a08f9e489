"""verdict_reason says the true cause: custom_only, a judge that is not configured, a partial selection."""

from __future__ import annotations

from pytest_skilleval.results.aggregate import aggregate
from tests.unit.test_aggregate import SIX, plan, rec

NO_JUDGE = {"judge": {"enabled": False, "reason": "LLM judge not configured: no judge model"}}
NO_JUDGES = {"accuracy": None, "goal_accuracy": None, "behavior_check": None}


def test_a_missing_judge_is_named_as_the_cause() -> None:
    records = [rec("a", all6=0.9, metrics=NO_JUDGES)]
    res = aggregate(records, plan(["a"], arms=["with_skill"], run_config=NO_JUDGE))
    assert res.verdict == "neutral"
    assert res.verdict_reason == "NO SCORE for correctness, effectiveness (LLM judge not configured)"
    assert res.agents["codex"].verdict_reason == res.verdict_reason


def test_an_unscored_dimension_without_a_known_cause_says_only_no_score() -> None:
    res = aggregate([rec("a", all6=0.9, metrics={"accuracy": None})], plan(["a"], arms=["with_skill"]))
    assert res.verdict_reason == "NO SCORE for correctness"


def test_custom_only_is_the_cause_not_the_dimensions() -> None:
    records = [
        rec("a", arm, grading_mode="custom_only", overall=0.9, metrics=dict.fromkeys(SIX))
        for arm in ("with_skill", "without_skill")
    ]
    res = aggregate(records, plan(["a"], grading_mode="custom_only"))
    assert res.verdict == "neutral"
    assert res.verdict_reason == "custom_only grading scores no dimensions, so the verdict cannot be PASS"
    assert res.score_policy == "custom-overall-v1"


def test_several_agents_each_name_their_cause() -> None:
    records = [
        rec("a", all6=0.9, agent="codex", metrics=NO_JUDGES),
        rec("a", all6=0.9, agent="claude-code", metrics={"skill_efficiency": 0.45}),
    ]
    res = aggregate(records, plan(["a"], agents=["codex", "claude-code"], arms=["with_skill"], run_config=NO_JUDGE))
    assert res.verdict_reason == (
        "no agent passes every dimension (codex: NO SCORE for correctness, effectiveness (LLM judge not configured);"
        " claude-code: dimension(s) below 0.50: efficiency)"
    )


def test_a_partial_selection_is_publication_incomplete_whatever_the_verdict() -> None:
    selected = {"selection_complete": False, "skipped_cases": ["b", "c"]}
    neutral = aggregate(
        [rec("a", all6=0.9, metrics=NO_JUDGES)],
        plan(["a", "b", "c"], arms=["with_skill"], run_config=NO_JUDGE, **selected),
    )
    assert neutral.verdict_reason.startswith("publication-incomplete (partial selection: 2 case(s) not run); NO SCORE")
    passing = aggregate([rec("a", all6=0.9)], plan(["a", "b", "c"], arms=["with_skill"], **selected))
    assert passing.verdict == "pass"
    assert passing.verdict_reason == (
        "publication-incomplete (partial selection: 2 case(s) not run); at least one agent passes every dimension"
    )


def test_missing_attempts_and_interruptions_are_named() -> None:
    missing = aggregate([rec("a", all6=0.9)], plan(["a"], arms=["with_skill"], n_attempts=2))
    assert missing.verdict_reason.startswith("publication-incomplete (1 planned trial(s) missing)")
    stopped = aggregate([rec("a", all6=0.9)], plan(["a", "b"], arms=["with_skill"], interrupted=True))
    assert stopped.verdict_reason == "publication-incomplete: run interrupted; not every agent completed"


def test_an_interrupted_run_names_its_best_agent_without_a_contradicting_no_score() -> None:
    """result.json gives an interrupted run no run-level overall or lift, while the tables above show the agent's
    scores: the summary's Best agent line says why there is none, not "overall NO SCORE"."""
    from pytest_skilleval.results.summary import render_summary

    records = [rec(case, arm, all6=0.9) for case in ("a", "b") for arm in ("with_skill", "without_skill")]
    stopped = aggregate(records, plan(["a", "b"], interrupted=True))
    assert stopped.best_agent == "codex" and stopped.overall_score is None
    said = " ".join(" ".join(render_summary(stopped, "result.json", 120)).split())
    assert "Best agent: codex, of the trials that ran; no run-level overall or lift: execution interrupted" in said
    assert "overall NO SCORE" not in said
