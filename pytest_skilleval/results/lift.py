"""Skill Lift: paired with-skill minus without-skill deltas, intervals and McNemar (pure)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_skilleval.results import stats
from pytest_skilleval.results.models import (
    DIMENSIONS,
    ArmSummary,
    EditVerdict,
    LiftSection,
    LiftStat,
    McNemar,
    PassAtKLift,
    RunPlan,
)
from pytest_skilleval.results.records import Arm
from pytest_skilleval.results.trials import (
    CUSTOM_ONLY,
    OUTCOME_DIMENSIONS,
    Condition,
    ScoredTrial,
    interval_pair,
    lift_band,
    mean_of,
    r4,
)
from verifier.evidence import JUDGE_METRICS, REPORTED_METRICS
from verifier.scoring import DIMENSION_SOURCES, dimension_scores

# -------------------------------------------------------------------------------------------------- lift


@dataclass
class CaseScores:
    """Per-case means in one arm: the unit of pairing for every lift."""

    overall: float | None
    metrics: dict[str, float | None]
    dims: dict[str, float | None]
    outcome: float | None
    custom: dict[str, float | None]
    judges: dict[str, frozenset[str]]


def case_scores(items: Sequence[ScoredTrial], custom_only: bool) -> CaseScores:
    scored = [t for t in items if t.scored]
    metrics = {m: mean_of(t.metrics[m] for t in scored) for m in REPORTED_METRICS}
    dims = dict.fromkeys(DIMENSIONS) if custom_only else dimension_scores(metrics)
    names = {n for t in scored for n in t.custom}
    judges = {
        m: frozenset(
            model
            for t in scored
            if t.metrics.get(m) is not None and (model := t.record.judge_models.get(m)) is not None
        )
        for m in JUDGE_METRICS
    }
    return CaseScores(
        overall=mean_of(t.overall for t in scored),
        metrics=metrics,
        dims=dims,
        outcome=mean_of(dims[d] for d in OUTCOME_DIMENSIONS),
        custom={n: mean_of(t.custom.get(n) for t in scored) for n in names},
        judges=judges,
    )


def lift_stat(pairs: Sequence[tuple[float, float]], excluded: int = 0) -> LiftStat:
    n = len(pairs)
    if n == 0:
        return LiftStat(delta=None, ci95=None, n_pairs=0, insufficient=True, band=None, excluded_judge_mixed=excluded)
    diffs = [w - wo for w, wo in pairs]
    delta = r4(stats.mean(diffs))
    assert delta is not None
    return LiftStat(
        delta=delta,
        ci95=interval_pair(stats.paired_bootstrap_ci(diffs)),
        n_pairs=n,
        insufficient=n < stats.MIN_PAIRS,
        band=lift_band(delta),
        with_skill=r4(stats.mean([w for w, _ in pairs])),
        without_skill=r4(stats.mean([wo for _, wo in pairs])),
        direction="up" if delta > 0 else "down" if delta < 0 else "flat",
        excluded_judge_mixed=excluded,
    )


def paired_scores(
    cases: Sequence[str],
    w: Mapping[str, CaseScores],
    wo: Mapping[str, CaseScores],
    value: Callable[..., float | None],  # one CaseScores -> its score (lambdas bind their key as a default)
    exclude: set[str],
) -> LiftStat:
    pairs: list[tuple[float, float]] = []
    excluded = 0
    for case in cases:
        a, b = value(w[case]), value(wo[case])
        if a is None or b is None:
            continue
        if case in exclude:
            excluded += 1
            continue
        pairs.append((a, b))
    return lift_stat(pairs, excluded)


def agent_lift(
    wc: Condition,
    woc: Condition,
    pass_w: dict[str, bool],
    pass_wo: dict[str, bool],
    ws: ArmSummary,
    wos: ArmSummary,
    plan: RunPlan,
) -> tuple[LiftSection, dict[str, LiftStat] | None]:
    custom_only = plan.grading_mode == CUSTOM_ONLY
    w = {c: case_scores(items, custom_only) for c, items in wc.by_case.items()}
    wo = {c: case_scores(items, custom_only) for c, items in woc.by_case.items()}
    # comparable cases: scored in both arms
    common = [c for c in wc.cases if c in w and c in wo and w[c].overall is not None and wo[c].overall is not None]
    mixed: dict[str, set[str]] = {
        m: {c for c in common if len(w[c].judges[m] | wo[c].judges[m]) > 1}  # across arms or attempts
        for m in JUDGE_METRICS
    }
    any_mixed = set().union(*mixed.values())
    dim_exclude = {d: set().union(*(mixed.get(m, set()) for m in DIMENSION_SOURCES[d])) for d in DIMENSIONS}
    overall = paired_scores(common, w, wo, lambda s: s.overall, any_mixed)
    outcome = paired_scores(common, w, wo, lambda s: s.outcome, any_mixed)
    dims = {d: paired_scores(common, w, wo, lambda s, d=d: s.dims[d], dim_exclude[d]) for d in DIMENSIONS}
    metrics = {
        m: paired_scores(common, w, wo, lambda s, m=m: s.metrics[m], mixed.get(m, set())) for m in REPORTED_METRICS
    }

    # McNemar on per-case pass/fail over the comparable, judge-consistent cases
    mc_cases = [c for c in common if c not in any_mixed]
    b = sum(1 for c in mc_cases if pass_w[c] and not pass_wo[c])
    cc = sum(1 for c in mc_cases if pass_wo[c] and not pass_w[c])
    both = sum(1 for c in mc_cases if pass_w[c] and pass_wo[c])
    p_value = r4(stats.mcnemar_exact(b, cc)) if mc_cases else None
    mcnemar = McNemar(
        only_with_skill=b,
        only_without_skill=cc,
        both_pass=both,
        both_fail=len(mc_cases) - b - cc - both,
        n_pairs=len(mc_cases),
        p_value=p_value,
    )
    pk_w, pk_wo = ws.pass_at_k, wos.pass_at_k
    rate_w = pk_w.rate if pk_w else None
    rate_wo = pk_wo.rate if pk_wo else None
    pk_lift = PassAtKLift(
        with_skill=rate_w,
        without_skill=rate_wo,
        delta=r4(pk_w.passed_cases / pk_w.total_cases - pk_wo.passed_cases / pk_wo.total_cases)
        if rate_w is not None and rate_wo is not None and pk_w and pk_wo
        else None,
        passed_cases_delta=pk_w.passed_cases - pk_wo.passed_cases if pk_w and pk_wo else None,
        with_skill_wilson95=pk_w.wilson95 if pk_w else None,
        without_skill_wilson95=pk_wo.wilson95 if pk_wo else None,
        mcnemar_p=p_value,
    )
    section = LiftSection(
        overall=overall,
        outcome=outcome,
        dimensions=dims,
        metrics=metrics,
        mcnemar_p=p_value,
        mcnemar=mcnemar,
        judge_mixed_cases={**{m: len(mixed[m]) for m in JUDGE_METRICS}, "any": len(any_mixed)},
        judge_mixed_case_ids=sorted(any_mixed),
        pass_at_k=pk_lift,
    )
    custom_names = sorted(set(ws.custom_metrics) | set(wos.custom_metrics))
    custom: dict[str, LiftStat] | None = None
    if custom_names or custom_only:
        custom = {n: paired_scores(common, w, wo, lambda s, n=n: s.custom.get(n), set()) for n in custom_names}
        if custom_only:
            custom["overall"] = overall
    return section, custom


def edit_verdict(overall: LiftStat) -> EditVerdict:
    """What an edit did, in words: helps or hurts only when the paired interval of the overall lift excludes
    zero over enough cases; anything else is no evidence either way."""
    if overall.insufficient or overall.ci95 is None or overall.delta is None:
        return "no evidence"
    if overall.ci95[0] > 0:
        return "the edit helps"
    if overall.ci95[1] < 0:
        return "the edit hurts"
    return "no evidence"


def edit_lift(
    with_skill: Condition,
    baseline: Condition,
    summaries: Mapping[Arm, tuple[ArmSummary, dict[str, bool]]],
    plan: RunPlan,
) -> dict[str, Any]:
    """The baseline_skill fields of an agent's result: its arm, the edit's lift (with_skill minus baseline_skill,
    paired as Skill Lift is) and its verdict, or why the lift is omitted; empty when the arm is not in the plan."""
    if "baseline_skill" not in plan.arms:
        return {}
    (ws, pass_w), (bs, pass_b) = summaries["with_skill"], summaries["baseline_skill"]
    fields: dict[str, Any] = {"baseline_skill": bs}
    if "skipped" in (with_skill.status, baseline.status):
        fields["edit_lift_omitted_reason"] = "an arm was not run"
    elif with_skill.withheld or baseline.withheld:
        fields["edit_lift_omitted_reason"] = "an LLM judge failed: that arm publishes no scores"
    else:
        section, _ = agent_lift(with_skill, baseline, pass_w, pass_b, ws, bs, plan)
        fields.update(edit_lift=section, edit_verdict=edit_verdict(section.overall))
    return fields
