"""Aggregation rules against hand-computed values."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_skilleval.results import stats
from pytest_skilleval.results.aggregate import (
    EXIT_BASELINE_ONLY,
    EXIT_INCOMPLETE,
    EXIT_VERDICT_FAIL,
    EXIT_VERDICT_INCONCLUSIVE,
    EXIT_VERDICT_NEUTRAL,
    aggregate,
    clean_score,
    dimension_band,
    dimension_scores,
    exit_code_for,
    gate_failure_reason,
    lift_band,
    overall_from_dimensions,
)
from pytest_skilleval.results.models import RunPlan
from pytest_skilleval.results.records import TokenUsage, TrialRecord

SIX = ("security", "skill_execution", "skill_efficiency", "accuracy", "goal_accuracy", "behavior_check")


def rec(
    case: str,
    arm: str = "with_skill",
    attempt: int = 1,
    *,
    agent: str = "codex",
    status: str = "scored",
    metrics: dict[str, Any] | None = None,
    all6: float | None = None,
    sec: float | None = None,
    **extra: Any,
) -> TrialRecord:
    """A record; `all6` fills the six metrics, `sec` sets security only (so overall == security)."""
    m: dict[str, Any] = dict.fromkeys(SIX)
    if all6 is not None:
        m = dict.fromkeys(SIX, all6)
    if sec is not None:
        m["security"] = sec
    m.update(metrics or {})
    extra.setdefault("activation", 1.0 if arm == "with_skill" else None)
    return TrialRecord(skill="s", case=case, agent=agent, arm=arm, attempt=attempt, status=status, metrics=m, **extra)


def plan(cases: list[str], **kw: Any) -> RunPlan:
    kw.setdefault("agents", ["codex"])
    return RunPlan(skill="s", cases=cases, evaluated_at="2025-01-01T00:00:00Z", **kw)


def both(case: str, w: float, wo: float, attempt: int = 1, **kw: Any) -> list[TrialRecord]:
    return [rec(case, "with_skill", attempt, sec=w, **kw), rec(case, "without_skill", attempt, sec=wo, **kw)]


# --------------------------------------------------------------------------------------------- scores


def test_clean_score_clamps_and_rejects() -> None:
    assert clean_score(1.7) == 1.0
    assert clean_score(-0.2) == 0.0
    assert clean_score(0.25) == 0.25
    assert clean_score(1) == 1.0
    assert clean_score(float("nan")) is None
    assert clean_score(float("inf")) is None
    assert clean_score(True) is None
    assert clean_score("0.5") is None
    assert clean_score(None) is None


def test_dimensions_and_overall_hand_computed() -> None:
    metrics = {
        "security": 1.0,
        "accuracy": 0.5,
        "skill_execution": 0.8,
        "goal_accuracy": 0.6,
        "behavior_check": 0.2,
        "skill_efficiency": 0.4,
    }
    dims = dimension_scores(metrics)
    assert dims == pytest.approx(
        {"security": 1.0, "correctness": 0.5, "discoverability": 0.8, "effectiveness": 0.4, "efficiency": 0.4}
    )
    # equal weight: effectiveness enters once
    assert overall_from_dimensions(dims) == pytest.approx((1.0 + 0.5 + 0.8 + 0.4 + 0.4) / 5)


def test_dimension_needs_all_its_evaluators_and_overall_uses_scored_ones() -> None:
    dims = dimension_scores({"security": 1.0, "skill_execution": 0.8, "skill_efficiency": 0.4, "goal_accuracy": 0.6})
    assert dims["effectiveness"] is None
    assert dims["correctness"] is None
    assert overall_from_dimensions(dims) == pytest.approx((1.0 + 0.8 + 0.4) / 3)
    assert overall_from_dimensions(dimension_scores({})) is None


@pytest.mark.parametrize(
    ("score", "band"),
    [
        (0.50, "PASS"),
        (0.1 + 0.2 + 0.2, "PASS"),  # 0.5000000000000001
        (0.7 - 0.2, "PASS"),  # 0.49999999999999994 rounds to 0.5
        (0.4999, "NEUTRAL"),
        (0.40, "NEUTRAL"),
        (0.7 - 0.3, "NEUTRAL"),  # 0.39999999999999997 rounds to 0.4
        (0.3999, "FAIL"),
        (0.0, "FAIL"),
        (None, None),
    ],
)
def test_dimension_band_edges(score: float | None, band: str | None) -> None:
    assert dimension_band(score) == band


@pytest.mark.parametrize(
    ("delta", "band"),
    [
        (0.05, "PASS"),
        (0.35 - 0.30, "PASS"),  # 0.04999999999999999 rounds to 0.05
        (0.0499, "NEUTRAL"),
        (0.0, "NEUTRAL"),
        (-0.0999, "NEUTRAL"),
        (-0.10, "FAIL"),
        (0.2 - 0.3, "FAIL"),  # -0.09999999999999998 rounds to -0.1
        (-0.5, "FAIL"),
        (None, None),
    ],
)
def test_lift_band_edges(delta: float | None, band: str | None) -> None:
    assert lift_band(delta) == band


# --------------------------------------------------------------------------------------------- trials


def test_trial_overall_recomputed_and_non_finite_rejected() -> None:
    r = rec("a", metrics={"security": float("nan"), "skill_execution": 1.4, "skill_efficiency": 0.5}, overall=0.99)
    res = aggregate([r], plan(["a"], arms=["with_skill"]))
    t = res.trials[0]
    assert t.metrics["security"] is None
    assert t.metrics["skill_execution"] == 1.0
    assert t.overall == 0.75  # mean(1.0, 0.5); the record's own overall is not trusted
    assert t.dimensions.security is None


def test_unscored_trials_are_kept_but_never_averaged() -> None:
    records = [
        rec("a", sec=0.8),
        rec("a", attempt=2, status="unscored", sec=0.1, error="judge failed"),
        rec("b", status="error", error="boom"),
    ]
    res = aggregate(records, plan(["a", "b"], arms=["with_skill"], n_attempts=2))
    ws = res.agents["codex"].with_skill
    assert ws.n_trials == 3 and ws.n_scored == 1
    assert ws.overall == 0.8
    assert ws.metrics["security"] == 0.8
    assert ws.metrics["accuracy"] is None
    assert ws.execution_status == "failed"
    assert {f.status for f in ws.trial_failures} == {"unscored", "error"}
    unscored = [t for t in res.trials if t.status != "scored"]
    assert all(t.overall is None and t.passed is None for t in unscored)
    assert res.execution_status == "failed"
    assert res.verdict == "neutral"
    assert res.overall_score is None


def test_run_with_no_scores_has_null_overall() -> None:
    records = [rec("a", status="unscored"), rec("a", "without_skill", status="unscored")]
    res = aggregate(records, plan(["a"]))
    agent = res.agents["codex"]
    assert agent.with_skill.overall is None
    assert agent.without_skill.overall is None
    assert agent.lift is not None and agent.lift.overall.delta is None
    assert agent.lift.overall.band is None
    assert agent.lift.overall.n_pairs == 0


# --------------------------------------------------------------------------------------------- pass@k


def _pass_k_records(arm: str = "with_skill") -> list[TrialRecord]:
    scores = {"c1": [0.2, 0.6, 0.4], "c2": [0.1, 0.2, 0.3], "c3": [0.5, 0.5, 0.9]}
    return [rec(c, arm, i + 1, sec=s) for c, ss in scores.items() for i, s in enumerate(ss)]


def test_pass_at_k_empirical_unbiased_and_pass_hat() -> None:
    res = aggregate(_pass_k_records(), plan(["c1", "c2", "c3"], arms=["with_skill"], n_attempts=3))
    pk = res.agents["codex"].with_skill.pass_at_k
    assert pk is not None
    assert (pk.passed_cases, pk.failed_cases, pk.total_cases) == (2, 1, 3)
    assert pk.rate == 0.6667
    assert pk.cases["c1"].first_pass_attempt == 2
    assert pk.cases["c3"].attempts_passed == 3
    # unbiased: k=1 mean(1/3, 0, 1); k=2 mean(1 - C(2,2)/C(3,2), 0, 1); k=3 mean(1, 0, 1)
    assert pk.unbiased == {"1": 0.4444, "2": 0.5556, "3": 0.6667}
    # pass^k: k=1 same; k=2 mean(C(1,2)/3=0, 0, 1); k=3 mean(0, 0, 1)
    assert pk.pass_hat_k == {"1": 0.4444, "2": 0.3333, "3": 0.3333}
    lo, hi = stats.wilson_interval(2, 3)  # type: ignore[misc]
    assert pk.wilson95 == [round(lo, 4), round(hi, 4)]


def test_pass_threshold_compares_rounded_overall() -> None:
    records = [rec("a", sec=0.7 - 0.2), rec("b", sec=0.4999)]  # 0.49999999999999994 -> 0.5 passes
    res = aggregate(records, plan(["a", "b"], arms=["with_skill"]))
    pk = res.agents["codex"].with_skill.pass_at_k
    assert pk is not None and pk.cases["a"].passed and not pk.cases["b"].passed


def test_pass_at_k_rate_counts_unrun_cases_as_not_passed() -> None:
    res = aggregate([rec("a", sec=0.9)], plan(["a", "b"], arms=["with_skill"], interrupted=True))
    pk = res.agents["codex"].with_skill.pass_at_k
    assert pk is not None and pk.rate == 0.5 and pk.total_cases == 2


def test_stop_on_pass_needs_attempts_only_up_to_first_pass() -> None:
    records = [rec("a", sec=0.9), rec("b", sec=0.1), rec("b", attempt=2, sec=0.7)]
    res = aggregate(records, plan(["a", "b"], arms=["with_skill"], n_attempts=3, stop_on_pass=True))
    ws = res.agents["codex"].with_skill
    assert ws.execution_status == "succeeded"
    assert ws.expected_attempts == 1 + 2
    assert ws.pass_at_k is not None
    assert ws.pass_at_k.cases["a"].attempts_skipped == 2
    assert ws.pass_at_k.unbiased == {"1": None, "2": None, "3": None}
    assert ws.pass_at_k.estimator_note
    assert res.coverage.publication_complete


def test_attempts_that_ran_past_a_pass_keep_the_counts_possible() -> None:
    """Under xdist two workers can run attempts of one case at once: all three ran though attempt 1 passed."""
    records = [rec("a", sec=0.9), rec("a", attempt=2, sec=0.9), rec("a", attempt=3, sec=0.2)]
    res = aggregate(records, plan(["a"], arms=["with_skill"], n_attempts=3, stop_on_pass=True))
    assert (res.coverage.run_trials, res.coverage.expected_trials) == (3, 3)
    assert res.coverage.publication_complete and res.coverage.missing_trials == []


# ----------------------------------------------------------------------------------------------- lift


def _lift_records(n: int = 5) -> list[TrialRecord]:
    ws = [0.9, 0.8, 0.7, 0.6, 0.5, 0.45][:n]
    return [r for i, w in enumerate(ws) for r in both(f"c{i}", w, 0.5)]


def test_lift_paired_mean_interval_and_bands() -> None:
    res = aggregate(_lift_records(), plan([f"c{i}" for i in range(5)]))
    lift = res.agents["codex"].lift
    assert lift is not None
    o = lift.overall
    assert o.delta == 0.2 and o.n_pairs == 5 and not o.insufficient and o.band == "PASS"
    assert o.with_skill == 0.7 and o.without_skill == 0.5 and o.direction == "up"
    lo, hi = stats.paired_bootstrap_ci([0.4, 0.3, 0.2, 0.1, 0.0])  # type: ignore[misc]
    assert o.ci95 == [round(lo, 4), round(hi, 4)]
    assert 0.0 <= o.ci95[0] < 0.2 < o.ci95[1] <= 0.4
    assert lift.dimensions["security"].delta == 0.2
    assert lift.metrics["security"].delta == 0.2
    assert lift.dimensions["correctness"].delta is None  # never scored: null, not 0
    assert lift.metrics["accuracy"].band is None
    # McNemar: the 0.5 baseline meets the 0.50 threshold too, so every case passes in both arms
    assert lift.mcnemar.n_pairs == 5 and lift.mcnemar.both_pass == 5 and lift.mcnemar_p == 1.0
    assert res.overall_lift == 0.2


def test_lift_band_edge_from_case_means() -> None:
    records = [r for i in range(5) for r in both(f"c{i}", 0.35, 0.30)]
    res = aggregate(records, plan([f"c{i}" for i in range(5)]))
    lift = res.agents["codex"].lift
    assert lift is not None and lift.overall.delta == 0.05 and lift.overall.band == "PASS"
    records = [r for i in range(5) for r in both(f"c{i}", 0.2, 0.3)]
    lift = aggregate(records, plan([f"c{i}" for i in range(5)])).agents["codex"].lift
    assert lift is not None and lift.overall.delta == -0.1 and lift.overall.band == "FAIL"


def test_lift_flags_insufficient_below_five_pairs() -> None:
    res = aggregate(_lift_records(4), plan([f"c{i}" for i in range(4)]))
    lift = res.agents["codex"].lift
    assert lift is not None and lift.overall.insufficient and lift.overall.n_pairs == 4


def test_lift_uses_only_comparable_cases_and_case_means() -> None:
    records = both("a", 0.8, 0.4) + [rec("a", attempt=2, sec=0.6), rec("a", "without_skill", 2, sec=0.6)]
    records += [rec("b", sec=0.9), rec("b", "without_skill", status="unscored")]
    res = aggregate(records, plan(["a", "b"], n_attempts=2))
    lift = res.agents["codex"].lift
    assert lift is not None
    # case a: with mean 0.7, without mean 0.5; case b has no scored baseline, so it is not paired
    assert lift.overall.n_pairs == 1 and lift.overall.delta == 0.2
    assert lift.overall.ci95 is None


def test_mcnemar_on_per_case_pass_fail() -> None:
    records = []
    for i in range(6):
        records += both(f"p{i}", 0.9, 0.1)  # pass only with the skill
    records += both("q", 0.1, 0.9)  # pass only without
    res = aggregate(records, plan([f"p{i}" for i in range(6)] + ["q"]))
    lift = res.agents["codex"].lift
    assert lift is not None
    assert (lift.mcnemar.only_with_skill, lift.mcnemar.only_without_skill) == (6, 1)
    assert lift.mcnemar_p == 0.125
    assert lift.pass_at_k.delta == round(6 / 7 - 1 / 7, 4)
    assert lift.pass_at_k.passed_cases_delta == 5


def test_mixed_judges_are_left_out_of_that_metrics_lift() -> None:
    records = []
    for i in range(5):
        judge_w = {"accuracy": "judge-a"}
        judge_wo = {"accuracy": "judge-b" if i == 0 else "judge-a"}
        m = {"accuracy": 0.9}
        records.append(rec(f"c{i}", "with_skill", sec=0.8, metrics=m, judge_models=judge_w))
        records.append(rec(f"c{i}", "without_skill", sec=0.5, metrics={"accuracy": 0.4}, judge_models=judge_wo))
    res = aggregate(records, plan([f"c{i}" for i in range(5)]))
    lift = res.agents["codex"].lift
    assert lift is not None
    assert lift.judge_mixed_cases["accuracy"] == 1 and lift.judge_mixed_cases["any"] == 1
    assert lift.judge_mixed_case_ids == ["c0"]
    assert lift.metrics["accuracy"].n_pairs == 4 and lift.metrics["accuracy"].excluded_judge_mixed == 1
    assert lift.dimensions["correctness"].n_pairs == 4
    assert lift.overall.n_pairs == 4
    # security has no judge: every case counts
    assert lift.metrics["security"].n_pairs == 5
    assert lift.mcnemar.n_pairs == 4


def test_a_case_judged_by_two_models_across_its_attempts_is_mixed() -> None:
    records = []
    for i in range(5):
        for attempt in (1, 2):
            model = "judge-b" if i == 0 and attempt == 2 else "judge-a"
            records.append(
                rec(
                    f"c{i}", "with_skill", attempt, sec=0.8, metrics={"accuracy": 0.9}, judge_models={"accuracy": model}
                )
            )
            records.append(
                rec(
                    f"c{i}",
                    "without_skill",
                    attempt,
                    sec=0.5,
                    metrics={"accuracy": 0.4},
                    judge_models={"accuracy": model},
                )
            )
    lift = aggregate(records, plan([f"c{i}" for i in range(5)], n_attempts=2)).agents["codex"].lift
    assert lift is not None
    assert lift.judge_mixed_cases["accuracy"] == 1 and lift.judge_mixed_case_ids == ["c0"]
    assert lift.metrics["accuracy"].n_pairs == 4


def test_outcome_lift_covers_correctness_and_effectiveness_only() -> None:
    records = []
    for i in range(5):
        w = {"accuracy": 0.8, "goal_accuracy": 0.6, "behavior_check": 1.0}
        wo = {"accuracy": 0.4, "goal_accuracy": 0.4, "behavior_check": 0.4}
        records += [
            rec(f"c{i}", "with_skill", sec=0.0, metrics=w),
            rec(f"c{i}", "without_skill", sec=1.0, metrics=wo),
        ]
    lift = aggregate(records, plan([f"c{i}" for i in range(5)])).agents["codex"].lift
    assert lift is not None
    # with: mean(0.8, 0.8) = 0.8; without: mean(0.4, 0.4) = 0.4
    assert lift.outcome.delta == 0.4
    assert "Correctness and Effectiveness only" in lift.outcome_label
    # overall includes security, which went the other way: with mean(0, .8, .8)=.5333, without mean(1, .4, .4)=.6
    assert lift.overall.delta == round((0.0 + 0.8 + 0.8) / 3 - (1.0 + 0.4 + 0.4) / 3, 4)


def test_custom_lift_per_custom_metric() -> None:
    records = []
    for i in range(5):
        records.append(rec(f"c{i}", "with_skill", sec=0.8, custom_metrics={"style": 0.9, "weird": 3.0}))
        records.append(rec(f"c{i}", "without_skill", sec=0.8, custom_metrics={"style": 0.6}))
    agent = aggregate(records, plan([f"c{i}" for i in range(5)])).agents["codex"]
    assert agent.custom_lift is not None
    assert agent.custom_lift["style"].delta == 0.3
    assert agent.with_skill.custom_metrics["weird"] == 1.0  # clamped
    assert agent.custom_lift["weird"].delta is None and agent.custom_lift["weird"].n_pairs == 0


def test_custom_only_uses_grader_overall_and_no_dimensions() -> None:
    records = []
    for i in range(5):
        for arm, score in (("with_skill", 0.9), ("without_skill", 0.6)):
            r = rec(f"c{i}", arm, grading_mode="custom_only", overall=score, custom_metrics={"cc": score})
            records.append(r)
    res = aggregate(records, plan([f"c{i}" for i in range(5)], grading_mode="custom_only"))
    agent = res.agents["codex"]
    assert agent.with_skill.overall == 0.9
    assert agent.with_skill.dimensions.model_dump() == dict.fromkeys(
        ("security", "correctness", "discoverability", "effectiveness", "efficiency")
    )
    assert agent.custom_lift is not None and agent.custom_lift["overall"].delta == 0.3
    assert agent.lift is not None and agent.lift.overall.delta == 0.3
    assert agent.verdict == "neutral" and "custom_only" in agent.verdict_reason
    assert res.attempt_policy.score_definition == "overall = user-provided reward overall"


# --------------------------------------------------------------------------------------- selections


def test_skip_baseline_judges_with_skill_dimensions_without_lift() -> None:
    records = [rec(f"c{i}", all6=0.9) for i in range(3)]
    res = aggregate(records, plan(["c0", "c1", "c2"], arms=["with_skill"]))
    agent = res.agents["codex"]
    assert agent.without_skill.execution_status == "skipped"
    assert agent.without_skill.overall is None and agent.without_skill.pass_at_k is None
    assert agent.lift is None and agent.lift_omitted_reason
    assert agent.verdict == "pass"
    assert res.verdict == "pass"
    assert agent.resources.delta.available is False
    assert exit_code_for(res, block=True) is None


def test_one_arm_partial_selection_is_publication_incomplete() -> None:
    records = [rec(f"c{i}", all6=0.9) for i in range(2)]
    res = aggregate(records, plan(["c0", "c1", "c2"], selection_complete=False, skipped_cases=["c2"]))
    agent = res.agents["codex"]
    assert agent.without_skill.execution_status == "skipped"
    assert agent.with_skill.execution_status == "succeeded"
    assert agent.with_skill.pass_at_k is not None and agent.with_skill.pass_at_k.total_cases == 2
    assert not res.coverage.publication_complete
    assert res.coverage.skipped_cases == ["c2"]
    assert res.coverage.partial_cases == ["c0", "c1"]
    assert len(res.coverage.missing_trials) == 1 + 3  # with_skill/c2 and without_skill/c0..c2
    assert exit_code_for(res, block=True) == EXIT_INCOMPLETE
    assert "coverage" in (gate_failure_reason(res) or "")


def test_baseline_calibration() -> None:
    records = [rec(f"c{i}", "without_skill", all6=0.9) for i in range(2)]
    res = aggregate(records, plan(["c0", "c1"], arms=["without_skill"]))
    assert res.baseline_calibration
    assert res.verdict == "neutral"
    assert res.agents["codex"].with_skill.execution_status == "skipped"
    assert res.agents["codex"].with_skill.overall is None
    assert res.agents["codex"].lift is None
    assert res.overall_score == 0.9  # from the baseline arm
    assert res.overall_lift is None
    assert exit_code_for(res, block=True) == EXIT_BASELINE_ONLY


# ---------------------------------------------------------------------------------------- activation


def test_inconclusive_when_every_positive_trial_never_activated() -> None:
    records = []
    for i in range(5):
        records += [rec(f"c{i}", all6=0.9, activation=0.0), rec(f"c{i}", "without_skill", all6=0.5)]
    # a negative control that "activated" does not count toward activation
    records += [rec("neg", all6=0.9, activation=1.0, negative_control=True), rec("neg", "without_skill", all6=0.9)]
    res = aggregate(records, plan([f"c{i}" for i in range(5)] + ["neg"]))
    agent = res.agents["codex"]
    assert agent.inconclusive and agent.verdict == "inconclusive"
    assert agent.inconclusive_reason == "skill never activated"
    assert agent.with_skill.overall == 0.9  # arm scores kept
    assert agent.lift is None and agent.custom_lift is None
    assert agent.activation.positive_trials == 5 and agent.activation.activated == 0
    assert res.verdict == "inconclusive"
    assert res.overall_lift is None
    assert exit_code_for(res, block=True) == EXIT_VERDICT_INCONCLUSIVE


def test_unknown_activation_is_not_inconclusive() -> None:
    records = [rec("a", all6=0.9, activation=0.0), rec("b", all6=0.9, activation=None)]
    res = aggregate(records, plan(["a", "b"], arms=["with_skill"]))
    assert not res.agents["codex"].inconclusive
    assert res.verdict == "pass"


def test_negative_cases_from_plan_do_not_count_toward_activation() -> None:
    records = [rec("a", all6=0.9, activation=0.0), rec("n", all6=0.9, activation=1.0)]
    res = aggregate(records, plan(["a", "n"], arms=["with_skill"], negative_cases=["n"]))
    assert res.agents["codex"].inconclusive


# ------------------------------------------------------------------------------------------ verdicts


def test_verdict_fail_when_a_dimension_is_below_040() -> None:
    records = [rec(f"c{i}", all6=0.9, metrics={"security": 0.39}) for i in range(2)]
    res = aggregate(records, plan(["c0", "c1"], arms=["with_skill"]))
    assert res.agents["codex"].verdict == "fail"
    assert res.verdict == "fail"
    assert exit_code_for(res, block=True) == EXIT_VERDICT_FAIL
    assert exit_code_for(res, block=False) is None


def test_verdict_neutral_when_a_dimension_is_neutral_or_unscored() -> None:
    neutral = [rec("a", all6=0.9, metrics={"skill_efficiency": 0.45})]
    res = aggregate(neutral, plan(["a"], arms=["with_skill"]))
    assert res.verdict == "neutral"
    assert exit_code_for(res, block=True) == EXIT_VERDICT_NEUTRAL
    unscored = [rec("a", all6=0.9, metrics={"accuracy": None})]
    res = aggregate(unscored, plan(["a"], arms=["with_skill"]))
    assert res.agents["codex"].verdict == "neutral"
    assert "correctness" in res.agents["codex"].verdict_reason


def test_top_level_verdict_any_agent_passes() -> None:
    records = [rec("a", all6=0.9, agent="codex"), rec("a", all6=0.1, agent="claude-code")]
    res = aggregate(records, plan(["a"], agents=["codex", "claude-code"], arms=["with_skill"]))
    assert res.agents["claude-code"].verdict == "fail"
    assert res.verdict == "pass"
    assert res.best_agent == "codex"
    assert res.comparison is not None
    assert res.comparison["overall"]["codex"]["with_skill"] == 0.9


def test_interrupted_run_is_neutral_and_blocks() -> None:
    records = [rec("a", all6=0.9)]
    res = aggregate(records, plan(["a", "b"], arms=["with_skill"], interrupted=True))
    assert res.execution_status == "interrupted"
    assert res.verdict == "neutral"
    assert res.overall_score is None
    assert exit_code_for(res, block=True) == EXIT_INCOMPLETE


def test_missing_attempts_fail_the_condition() -> None:
    records = [rec("a", all6=0.9)]
    res = aggregate(records, plan(["a"], arms=["with_skill"], n_attempts=2))
    assert res.agents["codex"].with_skill.execution_status == "failed"
    assert res.execution_status == "failed"
    assert res.coverage.missing_trials == ["codex/with_skill/a/2"]


def test_extra_and_duplicate_records_are_not_counted() -> None:
    records = [rec("a", all6=0.1), rec("a", all6=0.9), rec("zzz", all6=0.9), rec("a", attempt=5, all6=0.9)]
    res = aggregate(records, plan(["a"], arms=["with_skill"]))
    ws = res.agents["codex"].with_skill
    assert ws.n_trials == 1 and ws.overall == 0.9  # the last duplicate counts
    assert res.coverage.extra_cases == ["zzz"]
    assert len(res.warnings) == 3
    assert sum(1 for t in res.trials if not t.counted) == 3


# ----------------------------------------------------------------------------------------- resources


def _with_telemetry(r: TrialRecord, prompt: int | None, completion: int | None, secs: float | None) -> TrialRecord:
    tokens = TokenUsage(prompt=prompt, completion=completion, cache=10)
    return r.model_copy(update={"tokens": tokens, "agent_seconds": secs})


def test_resource_deltas() -> None:
    records = [
        _with_telemetry(rec("a", sec=0.9), 1000, 200, 10.0),
        _with_telemetry(rec("a", "without_skill", sec=0.5), 700, 100, 12.5),
    ]
    agent = aggregate(records, plan(["a"])).agents["codex"]
    assert agent.with_skill.resources.total_tokens == 1200
    assert agent.with_skill.resources.cache_tokens == 10
    d = agent.resources.delta
    assert d.available and d.total_tokens == 400 and d.prompt_tokens == 300 and d.agent_seconds == -2.5


def test_resource_delta_na_without_complete_telemetry_or_matching_counts() -> None:
    records = [
        _with_telemetry(rec("a", sec=0.9), 1000, None, 10.0),
        _with_telemetry(rec("a", "without_skill", sec=0.5), 700, 100, 12.5),
    ]
    agent = aggregate(records, plan(["a"])).agents["codex"]
    assert agent.with_skill.resources.total_tokens is None
    assert not agent.with_skill.resources.telemetry_complete
    assert agent.resources.delta.available is False and agent.resources.delta.total_tokens is None

    records = [
        _with_telemetry(rec("a", sec=0.9), 1, 1, 1.0),
        _with_telemetry(rec("a", "without_skill", sec=0.1), 1, 1, 1.0),
        _with_telemetry(rec("a", "without_skill", 2, sec=0.9), 1, 1, 1.0),
    ]
    agent = aggregate(records, plan(["a"], n_attempts=2, stop_on_pass=True)).agents["codex"]
    assert agent.with_skill.execution_status == "succeeded" and agent.without_skill.execution_status == "succeeded"
    assert agent.resources.delta.available is False
    assert "counts" in (agent.resources.delta.reason or "")


def test_numbers_are_rounded_to_four_places() -> None:
    res = aggregate([rec("a", sec=1 / 3)], plan(["a"], arms=["with_skill"]))
    assert res.agents["codex"].with_skill.overall == 0.3333
    assert res.trials[0].metrics["security"] == 0.3333


def test_a_failed_judge_withholds_that_arms_scores_and_the_lift() -> None:
    records = []
    for i in range(5):
        records.append(rec(f"c{i}", "with_skill", all6=0.9))
        records.append(rec(f"c{i}", "without_skill", all6=0.5))
    records[0] = rec(
        "c0",
        "with_skill",
        status="unscored",
        metrics={"accuracy": None, "security": 1.0},
        judge_failures={"accuracy": "gave up"},
    )
    agent = aggregate(records, plan([f"c{i}" for i in range(5)])).agents["codex"]
    ws, wos = agent.with_skill, agent.without_skill
    assert ws.execution_status == "failed" and ws.overall is None and ws.metrics["security"] is None
    assert ws.pass_at_k is None and ws.scored_attempts == 0
    assert any("failed LLM judge" in e for e in ws.execution_errors)
    assert wos.overall == 0.5  # the other arm still publishes
    assert agent.lift is None and agent.lift_omitted_reason == "an LLM judge failed: that arm publishes no scores"
    assert agent.verdict == "neutral"
