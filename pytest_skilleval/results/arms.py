"""Per-arm summaries: dimensions, resources and skill activation (pure)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_skilleval.results import stats
from pytest_skilleval.results.models import (
    DIMENSIONS,
    Activation,
    ArmResources,
    ArmSummary,
    DimensionBands,
    Dimensions,
    ResourceDelta,
    RunPlan,
    TrialFailure,
)
from pytest_skilleval.results.passk import checks_pass_at_k, condition_pass_at_k
from pytest_skilleval.results.records import Arm
from pytest_skilleval.results.trials import (
    CUSTOM_ONLY,
    Condition,
    ScoredTrial,
    dimension_band,
    mean_of,
    r4,
    total_of,
)
from verifier.evidence import REPORTED_METRICS
from verifier.scoring import clean_score, dimension_scores

# ---------------------------------------------------------------------------------------------- resources


def arm_resources(trials: Sequence[ScoredTrial]) -> ArmResources:
    recs = [t.record for t in trials]
    prompt = total_of([r.tokens.prompt if r.tokens else None for r in recs])
    completion = total_of([r.tokens.completion if r.tokens else None for r in recs])
    seconds = total_of([r.agent_seconds for r in recs])
    missing_tokens = sum(1 for r in recs if r.tokens is None or r.tokens.prompt is None or r.tokens.completion is None)
    missing_seconds = sum(1 for r in recs if r.agent_seconds is None)
    return ArmResources(
        n_trials=len(recs),
        telemetry_complete=bool(recs) and not missing_tokens and not missing_seconds,
        prompt_tokens=prompt,  # type: ignore[arg-type]
        completion_tokens=completion,  # type: ignore[arg-type]
        cache_tokens=total_of([r.tokens.cache if r.tokens else None for r in recs]),  # type: ignore[arg-type]
        total_tokens=None if prompt is None or completion is None else int(prompt + completion),
        agent_seconds=r4(seconds),
        cost_usd=r4(total_of([r.tokens.cost_usd if r.tokens else None for r in recs])),
        judge_cost_usd=r4(total_of([r.judge_cost_usd for r in recs])),
        trials_missing_tokens=missing_tokens,
        trials_missing_seconds=missing_seconds,
    )


def resource_delta(w: Condition, wo: Condition, rw: ArmResources, rwo: ArmResources) -> ResourceDelta:
    """With-skill minus baseline; only for complete telemetry, complete arms and identical attempt counts."""
    reason = None
    if "skipped" in (w.status, wo.status):
        reason = "an arm was not run"
    elif w.status != "succeeded" or wo.status != "succeeded":
        reason = "both arms must complete successfully"
    elif not (rw.telemetry_complete and rwo.telemetry_complete):
        reason = "telemetry incomplete"
    elif Counter(t.record.case for t in w.trials) != Counter(t.record.case for t in wo.trials):
        reason = "case/attempt counts differ between arms"
    if reason:
        return ResourceDelta(available=False, reason=reason)

    def minus(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a - b

    cost, cost_ci = None, None
    if rw.cost_usd is not None and rwo.cost_usd is not None:
        cost, cost_ci = _cost_delta(w, wo)
    return ResourceDelta(
        cost_usd=cost,
        cost_usd_ci95=cost_ci,
        available=True,
        prompt_tokens=minus(rw.prompt_tokens, rwo.prompt_tokens),  # type: ignore[arg-type]
        completion_tokens=minus(rw.completion_tokens, rwo.completion_tokens),  # type: ignore[arg-type]
        total_tokens=minus(rw.total_tokens, rwo.total_tokens),  # type: ignore[arg-type]
        agent_seconds=r4(minus(rw.agent_seconds, rwo.agent_seconds)),
    )


def edit_resources(
    conds: Mapping[Arm, Condition], summaries: Mapping[Arm, tuple[ArmSummary, dict[str, bool]]], plan: RunPlan
) -> dict[str, Any]:
    """The baseline_skill fields of an agent's resources: that arm's totals and with_skill minus them (the edit's
    cost, paired by case as `delta` is); empty when the arm is not in the plan."""
    if "baseline_skill" not in plan.arms:
        return {}
    rw, rb = summaries["with_skill"][0].resources, summaries["baseline_skill"][0].resources
    return {
        "baseline_skill": rb,
        "edit_delta": resource_delta(conds["with_skill"], conds["baseline_skill"], rw, rb),
    }


def _cost_delta(w: Condition, wo: Condition) -> tuple[float | None, list[float] | None]:
    """The two arms' cost difference and its interval: the per-case differences of cost, bootstrapped over cases
    as Skill Lift is, scaled to the run's total (the sum over cases is n times their mean)."""

    def per_case(cond: Condition) -> dict[str, float]:
        totals: dict[str, float] = {}
        for t in cond.trials:
            totals[t.record.case] = totals.get(t.record.case, 0.0) + (t.record.tokens.cost_usd or 0.0)  # type: ignore[union-attr]
        return totals

    a, b = per_case(w), per_case(wo)
    diffs = [a[case] - b[case] for case in a if case in b]
    if not diffs:
        return None, None
    ci = stats.paired_bootstrap_ci(diffs)
    n = len(diffs)
    return r4(math.fsum(diffs)), None if ci is None else [r4(ci[0] * n), r4(ci[1] * n)]  # type: ignore[list-item]


# -------------------------------------------------------------------------------------------------- arms


def arm_summary(cond: Condition, plan: RunPlan) -> tuple[ArmSummary, dict[str, bool]]:
    scored = cond.scored
    custom_only = plan.grading_mode == CUSTOM_ONLY
    metrics = {m: mean_of(t.metrics[m] for t in scored) for m in REPORTED_METRICS}
    dims = dict.fromkeys(DIMENSIONS) if custom_only else dimension_scores(metrics)
    custom_names = sorted({name for t in scored for name in t.custom})
    custom = {name: r4(mean_of(t.custom.get(name) for t in scored)) for name in custom_names}
    withheld = cond.status == "skipped" or cond.withheld
    pass_k, per_case = (None, {}) if withheld else condition_pass_at_k(cond, plan)
    summary = ArmSummary(
        arm=cond.arm,
        execution_status=cond.status,  # type: ignore[arg-type]
        execution_errors=cond.errors,
        expected_attempts=cond.expected_attempts,
        scored_attempts=len(scored),
        n_trials=len(cond.trials),
        n_scored=len(scored),
        overall=r4(mean_of(t.overall for t in scored)),
        dimensions=Dimensions(**{k: r4(v) for k, v in dims.items()}),
        dimension_bands=DimensionBands(**{k: dimension_band(v) for k, v in dims.items()}),
        metrics={k: r4(v) for k, v in metrics.items()},
        custom_metrics=custom,
        pass_at_k=pass_k,
        checks_pass_at_k=None if withheld else checks_pass_at_k(cond, plan),
        resources=arm_resources(cond.trials),
        trial_failures=[
            TrialFailure(case=t.record.case, attempt=t.record.attempt, status=t.record.status, error=t.record.error)
            for t in cond.trials
            if not t.scored
        ],
    )
    return summary, per_case


# ------------------------------------------------------------------------------------------- activation


def agent_activation(agent: str, trials: Sequence[ScoredTrial], plan: RunPlan) -> Activation:
    """INCONCLUSIVE when every positive with-skill trial has a confirmed activation of exactly zero."""
    negatives = set(plan.negative_cases)
    positive = [
        t
        for t in trials
        if t.record.agent == agent
        and t.record.arm == "with_skill"
        and not t.record.negative_control
        and t.record.case not in negatives
    ]
    confirmed = [t for t in positive if clean_score(t.record.activation) is not None]
    activated = [t for t in confirmed if (clean_score(t.record.activation) or 0.0) > 0.0]
    never = bool(positive) and len(confirmed) == len(positive) and not activated
    return Activation(
        positive_trials=len(positive), confirmed=len(confirmed), activated=len(activated), never_activated=never
    )
