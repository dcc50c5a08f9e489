"""Session aggregate: trial scores -> dimensions, arm summaries, pass@k, Skill Lift, verdicts (pure).

Input is the `TrialRecord`s that ran plus the `RunPlan` (what should have run); output is an `AggregateResult`
that the results writer and the terminal summary only *render*. Nothing here imports pytest or Harbor.

Rules that shape every function below:
- Missing is not zero: an unscored metric is None, averages skip it, a lift with no comparable case is None.
- A trial's overall is recomputed here from its metrics (one policy, enforced in one place): the equal-weight mean
  of the dimensions that are scored (all five once LLM judges exist); in custom_only it is the grader's overall.
- Every published number is rounded to 4 places; comparisons against thresholds use the rounded value so float
  noise (0.1 + 0.2 style) never moves a band.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pytest_skilleval import __version__, stats
from pytest_skilleval.outcome import ARMS, Arm, TrialRecord
from pytest_skilleval.result_models import (
    DIMENSIONS,
    Activation,
    AgentResources,
    AgentResult,
    AggregateResult,
    ArmResources,
    ArmSummary,
    AttemptOutcome,
    AttemptPolicy,
    Band,
    CasePassAtK,
    Coverage,
    DimensionBands,
    Dimensions,
    LiftSection,
    LiftStat,
    McNemar,
    PassAtK,
    PassAtKLift,
    ResourceDelta,
    RunPlan,
    TokenCounts,
    TrialEntry,
    TrialFailure,
    Verdict,
    VerdictPolicy,
)
from verifier.evidence import JUDGE_METRICS, STANDARD_METRICS
from verifier.scoring import DIMENSION_SOURCES, clean_score, dimension_scores, overall_from_dimensions

__all__ = [
    "DIMENSION_SOURCES",
    "EXIT_BASELINE_ONLY",
    "EXIT_INCOMPLETE",
    "EXIT_VERDICT_FAIL",
    "EXIT_VERDICT_INCONCLUSIVE",
    "EXIT_VERDICT_NEUTRAL",
    "aggregate",
    "clean_score",
    "dimension_band",
    "dimension_scores",
    "exit_code_for",
    "gate_failure_reason",
    "lift_band",
    "overall_from_dimensions",
    "r4",
]

OUTCOME_DIMENSIONS: tuple[str, str] = ("correctness", "effectiveness")

DIMENSION_PASS = 0.50
DIMENSION_NEUTRAL = 0.40
LIFT_PASS = 0.05
LIFT_FAIL = -0.10

CUSTOM_ONLY = "custom_only"


# ------------------------------------------------------------------------------------------------ scores


def r4(value: float | None) -> float | None:
    """Round to the 4 places every published number uses; None stays None."""
    return None if value is None else round(value, 4) + 0.0  # + 0.0 turns -0.0 into 0.0


def dimension_band(score: float | None) -> Band | None:
    """PASS >= 0.50, NEUTRAL 0.40 to < 0.50, FAIL < 0.40; None (NO SCORE) when unscored."""
    if score is None:
        return None
    value = round(score, 4)
    if value >= DIMENSION_PASS:
        return "PASS"
    if value >= DIMENSION_NEUTRAL:
        return "NEUTRAL"
    return "FAIL"


def lift_band(delta: float | None) -> Band | None:
    """PASS >= +0.05, FAIL <= -0.10, NEUTRAL between; None (N/A) when there is no lift."""
    if delta is None:
        return None
    value = round(delta, 4)
    if value >= LIFT_PASS:
        return "PASS"
    if value <= LIFT_FAIL:
        return "FAIL"
    return "NEUTRAL"


# ------------------------------------------------------------------------------------------ scored trials


@dataclass
class _Trial:
    """A record with its scores cleaned and its overall recomputed under the score policy."""

    record: TrialRecord
    metrics: dict[str, float | None]
    custom: dict[str, float]
    dims: dict[str, float | None]
    overall: float | None
    scored: bool
    passed: bool | None
    counted: bool = True
    notes: list[str] = field(default_factory=list)

    @property
    def ran(self) -> bool:
        return self.counted and self.record.status != "skipped"


def _score_trial(record: TrialRecord, plan: RunPlan) -> _Trial:
    metrics = {name: clean_score(record.metrics.get(name)) for name in STANDARD_METRICS}
    custom = {k: v for k, v in ((k, clean_score(v)) for k, v in record.custom_metrics.items()) if v is not None}
    notes: list[str] = []
    mode = record.grading_mode or plan.grading_mode
    custom_scored = mode == CUSTOM_ONLY or (
        all(v is None for v in metrics.values()) and clean_score(record.overall) is not None
    )
    if custom_scored:
        dims: dict[str, float | None] = dict.fromkeys(DIMENSIONS)
        overall = clean_score(record.overall)
        if mode != CUSTOM_ONLY:
            notes.append("no standard metrics; scored by the reward's overall")
    else:
        dims = dimension_scores(metrics)
        overall = overall_from_dimensions(dims)
    scored = record.status == "scored" and overall is not None
    if record.status == "scored" and overall is None:
        notes.append("reported scored but no usable score")
    if not scored:
        overall = None
    passed = None if overall is None else round(overall, 4) >= plan.pass_threshold
    return _Trial(record, metrics, custom, dims, overall, scored, passed, notes=notes)


def _trial_entry(t: _Trial) -> TrialEntry:
    rec = t.record
    tokens = None
    if rec.tokens is not None:
        tk = rec.tokens
        total = tk.prompt + tk.completion if tk.prompt is not None and tk.completion is not None else None
        tokens = TokenCounts(
            prompt=tk.prompt, completion=tk.completion, cache=tk.cache, total=total, cost_usd=r4(tk.cost_usd)
        )
    return TrialEntry(
        case=rec.case,
        agent=rec.agent,
        arm=rec.arm,
        attempt=rec.attempt,
        status=rec.status if (t.scored or rec.status != "scored") else "unscored",
        grading_mode=rec.grading_mode,
        overall=r4(t.overall),
        passed=t.passed,
        metrics={k: r4(v) for k, v in t.metrics.items()},
        dimensions=Dimensions(**{k: r4(v) for k, v in t.dims.items()}),
        custom_metrics={k: r4(v) for k, v in t.custom.items()},  # type: ignore[misc]
        overall_basis=None if t.overall is None or rec.grading_mode == CUSTOM_ONLY
        else [d for d, v in t.dims.items() if v is not None],
        activation=r4(clean_score(rec.activation)),
        negative_control=rec.negative_control,
        judge_models=dict(rec.judge_models),
        tokens=tokens,
        seconds=r4(rec.agent_seconds),
        error=rec.error,
        reason=rec.reason,
        nodeid=rec.nodeid,
        counted=t.counted,
        notes=t.notes,
    )


# ------------------------------------------------------------------------------------------------ helpers


def _pair(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [r4(interval[0]), r4(interval[1])]  # type: ignore[list-item]


def _mean_of(values: Iterable[float | None]) -> float | None:
    return stats.mean([v for v in values if v is not None])


def _by_case(trials: Iterable[_Trial]) -> dict[str, list[_Trial]]:
    out: dict[str, list[_Trial]] = defaultdict(list)
    for t in trials:
        out[t.record.case].append(t)
    for items in out.values():
        items.sort(key=lambda t: t.record.attempt)
    return out


def _required_attempts(case_trials: Sequence[_Trial], plan: RunPlan) -> int:
    """Attempts a case must have: all of them, or up to the first pass under stop_on_pass."""
    if plan.stop_on_pass:
        for t in case_trials:
            if t.scored and t.passed:
                return t.record.attempt
    return plan.n_attempts


# ------------------------------------------------------------------------------------------- conditions


@dataclass
class _Condition:
    agent: str
    arm: Arm
    status: str
    errors: list[str]
    cases: list[str]  # cases in scope for this condition
    trials: list[_Trial]  # counted trials that ran, in scope
    expected_attempts: int

    @property
    def scored(self) -> list[_Trial]:
        return [t for t in self.trials if t.scored]

    @property
    def by_case(self) -> dict[str, list[_Trial]]:
        return _by_case(self.trials)


def _condition(agent: str, arm: Arm, ran: Sequence[_Trial], scope: list[str], plan: RunPlan) -> _Condition:
    if arm not in plan.arms:
        return _Condition(agent, arm, "skipped", [f"{arm} arm not run"], [], [], 0)
    mine = [t for t in ran if t.record.agent == agent and t.record.arm == arm and t.record.case in scope]
    if not mine and not plan.selection_complete:
        return _Condition(agent, arm, "skipped", [f"{arm} arm not selected"], [], [], 0)
    errors: list[str] = []
    by_case = _by_case(mine)
    expected = 0
    missing = 0
    for case in scope:
        need = _required_attempts(by_case.get(case, []), plan)
        expected += need
        have = {t.record.attempt for t in by_case.get(case, [])}
        missing += sum(1 for a in range(1, need + 1) if a not in have)
    if missing:
        errors.append(f"{missing} expected attempt(s) missing")
    n_error = sum(1 for t in mine if t.record.status == "error")
    n_unscored = sum(1 for t in mine if not t.scored) - n_error
    if n_error:
        errors.append(f"{n_error} trial(s) errored")
    if n_unscored:
        errors.append(f"{n_unscored} trial(s) unscored")
    if not scope:
        errors.append("no cases in scope")
    status = "failed" if errors else "succeeded"
    return _Condition(agent, arm, status, errors, scope, mine, expected)


# ------------------------------------------------------------------------------------------------- pass@k


def _pass_at_k(cond: _Condition, plan: RunPlan) -> tuple[PassAtK, dict[str, bool]]:
    k = plan.n_attempts
    by_case = cond.by_case
    cases: dict[str, CasePassAtK] = {}
    per_case_pass: dict[str, bool] = {}
    counts: dict[str, tuple[int, int]] = {}
    for case in cond.cases:
        items = by_case.get(case, [])
        scored = [t for t in items if t.scored]
        passing = [t for t in scored if t.passed]
        passed = bool(passing)
        used = len(items)
        skipped = k - used if (plan.stop_on_pass and passed) else 0
        cases[case] = CasePassAtK(
            passed=passed,
            first_pass_attempt=passing[0].record.attempt if passing else None,
            attempts_used=used,
            attempts_scored=len(scored),
            attempts_passed=len(passing),
            attempts_skipped=max(0, skipped),
            attempts_missing=max(0, k - used - max(0, skipped)),
            best_score=r4(max((t.overall for t in scored if t.overall is not None), default=None)),
            attempts=[
                AttemptOutcome(attempt=t.record.attempt, score=r4(t.overall), passed=bool(t.passed)) for t in items
            ],
        )
        per_case_pass[case] = passed
        counts[case] = (len(scored), len(passing))
    total = len(cond.cases)
    n_passed = sum(per_case_pass.values())
    unbiased: dict[str, float | None] = {}
    hat: dict[str, float | None] = {}
    est_cases: dict[str, int] = {}
    note = None
    for kk in range(1, k + 1):
        eligible = [(n, c) for n, c in counts.values() if n >= kk]
        est_cases[str(kk)] = len(eligible)
        if plan.stop_on_pass:
            unbiased[str(kk)] = hat[str(kk)] = None
            continue
        # eligible cases have n >= kk, so neither estimator returns None here
        unbiased[str(kk)] = r4(stats.mean([stats.pass_at_k_unbiased(n, c, kk) or 0.0 for n, c in eligible]))
        hat[str(kk)] = r4(stats.mean([stats.pass_hat_k(n, c, kk) or 0.0 for n, c in eligible]))
    if plan.stop_on_pass:
        note = "stop_on_pass truncates attempts, so the unbiased estimators are not estimable"
    elif any(n < k for n, _ in counts.values()):
        note = "cases with fewer scored attempts than k are left out of that k's estimators"
    result = PassAtK(
        k=k,
        pass_threshold=plan.pass_threshold,
        stop_on_pass=plan.stop_on_pass,
        passed_cases=n_passed,
        failed_cases=total - n_passed,
        total_cases=total,
        rate=r4(n_passed / total) if total else None,
        wilson95=_pair(stats.wilson_interval(n_passed, total)),
        unbiased=unbiased,
        pass_hat_k=hat,
        estimator_cases=est_cases,
        estimator_note=note,
        attempts_used=sum(c.attempts_used for c in cases.values()),
        max_attempts_possible=total * k,
        cases=cases,
    )
    return result, per_case_pass


# ---------------------------------------------------------------------------------------------- resources


def _arm_resources(trials: Sequence[_Trial]) -> ArmResources:
    recs = [t.record for t in trials]

    def total_of(values: list[int | float | None]) -> int | float | None:
        return None if not values or any(v is None for v in values) else sum(values)  # type: ignore[arg-type]

    prompt = total_of([r.tokens.prompt if r.tokens else None for r in recs])
    completion = total_of([r.tokens.completion if r.tokens else None for r in recs])
    seconds = total_of([r.agent_seconds for r in recs])
    missing_tokens = sum(
        1 for r in recs if r.tokens is None or r.tokens.prompt is None or r.tokens.completion is None
    )
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
        trials_missing_tokens=missing_tokens,
        trials_missing_seconds=missing_seconds,
    )


def _resource_delta(w: _Condition, wo: _Condition, rw: ArmResources, rwo: ArmResources) -> ResourceDelta:
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

    return ResourceDelta(
        available=True,
        prompt_tokens=minus(rw.prompt_tokens, rwo.prompt_tokens),  # type: ignore[arg-type]
        completion_tokens=minus(rw.completion_tokens, rwo.completion_tokens),  # type: ignore[arg-type]
        total_tokens=minus(rw.total_tokens, rwo.total_tokens),  # type: ignore[arg-type]
        agent_seconds=r4(minus(rw.agent_seconds, rwo.agent_seconds)),
    )


# -------------------------------------------------------------------------------------------------- arms


def _arm_summary(cond: _Condition, plan: RunPlan) -> tuple[ArmSummary, dict[str, bool]]:
    scored = cond.scored
    custom_only = plan.grading_mode == CUSTOM_ONLY
    metrics = {m: _mean_of(t.metrics[m] for t in scored) for m in STANDARD_METRICS}
    dims = dict.fromkeys(DIMENSIONS) if custom_only else dimension_scores(metrics)
    custom_names = sorted({name for t in scored for name in t.custom})
    custom = {name: r4(_mean_of(t.custom.get(name) for t in scored)) for name in custom_names}
    pass_k, per_case = (None, {}) if cond.status == "skipped" else _pass_at_k(cond, plan)
    summary = ArmSummary(
        arm=cond.arm,
        execution_status=cond.status,  # type: ignore[arg-type]
        execution_errors=cond.errors,
        expected_attempts=cond.expected_attempts,
        scored_attempts=len(scored),
        n_trials=len(cond.trials),
        n_scored=len(scored),
        overall=r4(_mean_of(t.overall for t in scored)),
        dimensions=Dimensions(**{k: r4(v) for k, v in dims.items()}),
        dimension_bands=DimensionBands(**{k: dimension_band(v) for k, v in dims.items()}),
        metrics={k: r4(v) for k, v in metrics.items()},
        custom_metrics=custom,
        pass_at_k=pass_k,
        resources=_arm_resources(cond.trials),
        trial_failures=[
            TrialFailure(case=t.record.case, attempt=t.record.attempt, status=t.record.status, error=t.record.error)
            for t in cond.trials
            if not t.scored
        ],
    )
    return summary, per_case


# -------------------------------------------------------------------------------------------------- lift


@dataclass
class _CaseScores:
    """Per-case means in one arm: the unit of pairing for every lift."""

    overall: float | None
    metrics: dict[str, float | None]
    dims: dict[str, float | None]
    outcome: float | None
    custom: dict[str, float | None]
    judges: dict[str, frozenset[str]]


def _case_scores(items: Sequence[_Trial], custom_only: bool) -> _CaseScores:
    scored = [t for t in items if t.scored]
    metrics = {m: _mean_of(t.metrics[m] for t in scored) for m in STANDARD_METRICS}
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
    return _CaseScores(
        overall=_mean_of(t.overall for t in scored),
        metrics=metrics,
        dims=dims,
        outcome=_mean_of(dims[d] for d in OUTCOME_DIMENSIONS),
        custom={n: _mean_of(t.custom.get(n) for t in scored) for n in names},
        judges=judges,
    )


def _lift_stat(pairs: Sequence[tuple[float, float]], excluded: int = 0) -> LiftStat:
    n = len(pairs)
    if n == 0:
        return LiftStat(delta=None, ci95=None, n_pairs=0, insufficient=True, band=None, excluded_judge_mixed=excluded)
    diffs = [w - wo for w, wo in pairs]
    delta = r4(stats.mean(diffs))
    assert delta is not None
    return LiftStat(
        delta=delta,
        ci95=_pair(stats.paired_bootstrap_ci(diffs)),
        n_pairs=n,
        insufficient=n < stats.MIN_PAIRS,
        band=lift_band(delta),
        with_skill=r4(stats.mean([w for w, _ in pairs])),
        without_skill=r4(stats.mean([wo for _, wo in pairs])),
        direction="up" if delta > 0 else "down" if delta < 0 else "flat",
        excluded_judge_mixed=excluded,
    )


def _paired(
    cases: Sequence[str],
    w: Mapping[str, _CaseScores],
    wo: Mapping[str, _CaseScores],
    value: callable,  # type: ignore[valid-type]
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
    return _lift_stat(pairs, excluded)


def _lift(
    wc: _Condition,
    woc: _Condition,
    pass_w: dict[str, bool],
    pass_wo: dict[str, bool],
    ws: ArmSummary,
    wos: ArmSummary,
    plan: RunPlan,
) -> tuple[LiftSection, dict[str, LiftStat] | None]:
    custom_only = plan.grading_mode == CUSTOM_ONLY
    w = {c: _case_scores(items, custom_only) for c, items in wc.by_case.items()}
    wo = {c: _case_scores(items, custom_only) for c, items in woc.by_case.items()}
    # comparable cases: scored in both arms
    common = [c for c in wc.cases if c in w and c in wo and w[c].overall is not None and wo[c].overall is not None]
    mixed: dict[str, set[str]] = {
        m: {c for c in common if len(w[c].judges[m] | wo[c].judges[m]) > 1}  # across arms or attempts
        for m in JUDGE_METRICS
    }
    any_mixed = set().union(*mixed.values())
    dim_exclude = {
        d: set().union(*(mixed.get(m, set()) for m in DIMENSION_SOURCES[d])) for d in DIMENSIONS
    }
    overall = _paired(common, w, wo, lambda s: s.overall, any_mixed)
    outcome = _paired(common, w, wo, lambda s: s.outcome, any_mixed)
    dims = {d: _paired(common, w, wo, lambda s, d=d: s.dims[d], dim_exclude[d]) for d in DIMENSIONS}
    metrics = {m: _paired(common, w, wo, lambda s, m=m: s.metrics[m], mixed.get(m, set())) for m in STANDARD_METRICS}

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
        custom = {n: _paired(common, w, wo, lambda s, n=n: s.custom.get(n), set()) for n in custom_names}
        if custom_only:
            custom["overall"] = overall
    return section, custom


# ------------------------------------------------------------------------------------------- activation


def _activation(agent: str, trials: Sequence[_Trial], plan: RunPlan) -> Activation:
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


# ------------------------------------------------------------------------------------------------ verdicts


def _agent_verdict(status: str, ws: ArmSummary, inconclusive: bool, plan: RunPlan) -> tuple[Verdict, str]:
    if status != "succeeded":
        return "neutral", f"agent execution {status}; only a succeeded agent is judged"
    if ws.execution_status == "skipped":
        return "neutral", "with-skill arm not run (baseline calibration): no skill was measured"
    if inconclusive:
        return "inconclusive", "skill never activated"
    if plan.grading_mode == CUSTOM_ONLY:
        return "neutral", "custom_only grading has no dimensions to gate on"
    bands = ws.dimension_bands.model_dump()
    missing = [d for d, b in bands.items() if b is None]
    if missing:
        failing = [d for d, b in bands.items() if b == "FAIL"]
        extra = f"; failing: {', '.join(failing)}" if failing else ""
        return "neutral", f"NO SCORE for {', '.join(missing)}{extra}"
    failing = [d for d, b in bands.items() if b == "FAIL"]
    if failing:
        return "fail", f"dimension(s) below 0.40: {', '.join(failing)}"
    neutral = [d for d, b in bands.items() if b == "NEUTRAL"]
    if neutral:
        return "neutral", f"dimension(s) below 0.50: {', '.join(neutral)}"
    return "pass", "every dimension passes"


def _top_verdict(
    execution_status: str, calibration: bool, agents: Mapping[str, AgentResult]
) -> tuple[Verdict, str]:
    if execution_status != "succeeded":
        return "neutral", f"run {execution_status}; not every agent completed"
    if calibration:
        return "neutral", "baseline calibration (with-skill arm skipped): no skill was measured"
    succeeded = [a for a in agents.values() if a.execution_status == "succeeded"]
    judged = [a for a in succeeded if a.verdict != "inconclusive"]
    if any(a.verdict == "pass" for a in judged):
        return "pass", "at least one agent passes every dimension"
    if not succeeded:
        return "neutral", "no agent completed"
    if not judged:
        return "inconclusive", "skill never activated for any agent"
    if any(a.verdict == "neutral" for a in judged):
        return "neutral", "no agent passes every dimension"
    return "fail", "every judged agent fails a dimension"


# --------------------------------------------------------------------------------------------- coverage


def _trial_key(t: TrialRecord) -> tuple[str, str, str, int]:
    return (t.agent, t.arm, t.case, t.attempt)


def _prepare(records: Sequence[TrialRecord], plan: RunPlan) -> tuple[list[_Trial], list[str]]:
    """Score every record and mark the ones that must not count (extra, duplicate, out of grid)."""
    warnings: list[str] = []
    cases, agents = set(plan.cases), set(plan.agents)
    trials = [_score_trial(r, plan) for r in records]
    last: dict[tuple[str, str, str, int], _Trial] = {}
    for t in trials:
        rec = t.record
        why = None
        if rec.agent not in agents:
            why = f"agent {rec.agent!r} not in the plan"
        elif rec.case not in cases:
            why = f"case {rec.case!r} not in the dataset"
        elif rec.arm not in plan.arms:
            why = f"arm {rec.arm} was not part of this run"
        elif not 1 <= rec.attempt <= plan.n_attempts:
            why = f"attempt {rec.attempt} outside 1..{plan.n_attempts}"
        if why:
            t.counted = False
            t.notes.append(why)
            warnings.append(f"ignored {rec.agent}/{rec.arm}/{rec.case}/{rec.attempt}: {why}")
            continue
        key = _trial_key(rec)
        if key in last:
            last[key].counted = False
            last[key].notes.append("duplicate; superseded by a later record")
            warnings.append(f"duplicate record for {'/'.join(map(str, key))}; the last one counts")
        last[key] = t
    return trials, warnings


def _coverage(ran: Sequence[_Trial], plan: RunPlan) -> Coverage:
    """The expected grid (stop_on_pass-aware) against what ran: missing trials and the cases they belong to."""
    by_key: dict[tuple[str, str], dict[str, list[_Trial]]] = defaultdict(lambda: defaultdict(list))
    for t in ran:
        by_key[(t.record.agent, t.record.arm)][t.record.case].append(t)
    missing: list[str] = []
    expected = 0
    for agent in plan.agents:
        for arm in plan.arms:
            for case in plan.cases:
                items = sorted(by_key[(agent, arm)].get(case, []), key=lambda t: t.record.attempt)
                need = _required_attempts(items, plan)
                expected += need
                have = {t.record.attempt for t in items}
                missing += [f"{agent}/{arm}/{case}/{a}" for a in range(1, need + 1) if a not in have]
    missing_cases = {m.split("/")[2] for m in missing}
    touched = {t.record.case for t in ran}
    skipped = [c for c in plan.cases if c not in touched or c in set(plan.skipped_cases)]
    partial = [c for c in plan.cases if c in missing_cases and c not in skipped]
    complete = plan.selection_complete and not plan.interrupted and not missing and not plan.skipped_cases
    return Coverage(
        publication_complete=complete,
        selection_complete=plan.selection_complete,
        interrupted=plan.interrupted,
        expected_trials=expected,
        run_trials=len(ran),
        scored_trials=sum(1 for t in ran if t.scored),
        missing_trials=missing,
        skipped_cases=skipped,
        partial_cases=partial,
        extra_cases=[],
    )


def _scope(agent: str, ran: Sequence[_Trial], plan: RunPlan) -> list[str]:
    """Cases this agent is judged on: all of them, or under a partial selection the selected ones that ran."""
    if plan.selection_complete:
        return list(plan.cases)
    skipped = set(plan.skipped_cases)
    touched = {t.record.case for t in ran if t.record.agent == agent}
    return [c for c in plan.cases if c not in skipped and c in touched]


# ----------------------------------------------------------------------------------------------- public


def aggregate(records: Sequence[TrialRecord], plan: RunPlan) -> AggregateResult:
    """Everything the session reports, computed once from the records that ran and the plan that was expected."""
    trials, warnings = _prepare(records, plan)
    ran = [t for t in trials if t.ran]
    extra_cases = sorted({t.record.case for t in trials if t.record.case not in set(plan.cases)})
    calibration = "with_skill" not in plan.arms and "without_skill" in plan.arms

    agents: dict[str, AgentResult] = {}
    for agent in plan.agents:
        scope = _scope(agent, ran, plan)
        conds = {arm: _condition(agent, arm, ran, scope, plan) for arm in ARMS}
        summaries = {arm: _arm_summary(conds[arm], plan) for arm in ARMS}
        (ws, pass_w), (wos, pass_wo) = summaries["with_skill"], summaries["without_skill"]
        statuses = [c.status for c in conds.values()]
        if all(s == "skipped" for s in statuses):
            status = "skipped"
        elif "failed" in statuses:
            status = "failed"
        else:
            status = "succeeded"
        activation = _activation(agent, ran, plan)
        modes = {arm: {t.record.grading_mode for t in conds[arm].trials} for arm in ARMS}
        if modes["with_skill"] and modes["without_skill"] and modes["with_skill"] != modes["without_skill"]:
            warnings.append(f"{agent}: arms were graded differently ({modes})")

        lift = custom_lift = None
        omitted = None
        if activation.never_activated:
            omitted = "skill never activated (INCONCLUSIVE)"
        elif "skipped" in (conds["with_skill"].status, conds["without_skill"].status):
            omitted = "an arm was not run"
        else:
            lift, custom_lift = _lift(conds["with_skill"], conds["without_skill"], pass_w, pass_wo, ws, wos, plan)
        verdict, reason = _agent_verdict(status, ws, activation.never_activated, plan)
        errors = [f"{arm}: {e}" for arm in ARMS for e in conds[arm].errors if conds[arm].status == "failed"]
        agents[agent] = AgentResult(
            name=agent,
            model=plan.agent_models.get(agent),
            execution_status=status,  # type: ignore[arg-type]
            execution_errors=errors,
            expected_attempts=sum(c.expected_attempts for c in conds.values()),
            scored_attempts=ws.scored_attempts + wos.scored_attempts,
            verdict=verdict,
            verdict_reason=reason,
            inconclusive=activation.never_activated,
            inconclusive_reason="skill never activated" if activation.never_activated else None,
            activation=activation,
            with_skill=ws,
            without_skill=wos,
            lift=lift,
            custom_lift=custom_lift,
            lift_omitted_reason=omitted,
            resources=AgentResources(
                with_skill=ws.resources,
                without_skill=wos.resources,
                delta=_resource_delta(
                    conds["with_skill"], conds["without_skill"], ws.resources, wos.resources
                ),
            ),
        )

    coverage = _coverage(ran, plan).model_copy(update={"extra_cases": extra_cases})
    agent_statuses = [a.execution_status for a in agents.values()]
    execution_errors = [f"{a.name}: {e}" for a in agents.values() for e in a.execution_errors]
    if plan.interrupted:
        execution_status = "interrupted"
    elif "failed" in agent_statuses or "succeeded" not in agent_statuses:
        execution_status = "failed"
        if "succeeded" not in agent_statuses and "failed" not in agent_statuses:
            execution_errors.append("no trials ran")
    else:
        execution_status = "succeeded"
    verdict, reason = _top_verdict(execution_status, calibration, agents)
    if verdict != "neutral" and not coverage.publication_complete:
        reason += " (publication-incomplete: partial selection)"
    best = _best_agent(agents, calibration)
    overall_score = overall_lift = None
    if best is not None and execution_status == "succeeded":
        best_res = agents[best]
        overall_score = (best_res.without_skill if calibration else best_res.with_skill).overall
        overall_lift = best_res.lift.overall.delta if best_res.lift else None

    custom_only = plan.grading_mode == CUSTOM_ONLY
    return AggregateResult(
        skill_name=plan.skill,
        execution_status=execution_status,  # type: ignore[arg-type]
        execution_errors=execution_errors,
        verdict=verdict,
        verdict_reason=reason,
        baseline_calibration=calibration,
        grading_mode=plan.grading_mode,
        verdict_policy=VerdictPolicy(attempt_pass_threshold=plan.pass_threshold),
        attempt_policy=AttemptPolicy(
            max_attempts=plan.n_attempts,
            pass_threshold=plan.pass_threshold,
            stop_on_pass=plan.stop_on_pass,
            score_definition=(
                "overall = user-provided reward overall"
                if custom_only
                else "overall = mean(security, correctness, discoverability, effectiveness, efficiency) over the "
                "scored dimensions; effectiveness = (goal_accuracy + behavior_check) / 2"
            ),
        ),
        evaluated_at=plan.evaluated_at or datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        evaluator_version=__version__,
        dataset_summary=plan.dataset_summary,
        dataset_digest=plan.dataset_digest,
        dataset_digest_algorithm=plan.dataset_digest_algorithm,
        run_config=plan.run_config,
        duration_seconds=r4(plan.duration_seconds),
        coverage=coverage,
        expected_attempts=sum(a.expected_attempts for a in agents.values()),
        scored_attempts=sum(a.scored_attempts for a in agents.values()),
        agents_run=[a for a, r in agents.items() if r.execution_status != "skipped"],
        best_agent=best,
        overall_score=overall_score,
        overall_lift=overall_lift,
        agents=agents,
        comparison=_comparison(agents) if sum(a.execution_status != "skipped" for a in agents.values()) > 1 else None,
        trials=[_trial_entry(t) for t in trials],
        warnings=warnings,
    )


def _best_agent(agents: Mapping[str, AgentResult], calibration: bool) -> str | None:
    """The succeeded agent with the highest arm score, ties broken by lift."""
    best: tuple[float, float] | None = None
    name = None
    for agent in agents.values():
        if agent.execution_status != "succeeded":
            continue
        score = (agent.without_skill if calibration else agent.with_skill).overall
        if score is None:
            continue
        lift = agent.lift.overall.delta if agent.lift and agent.lift.overall.delta is not None else -math.inf
        if best is None or (score, lift) > best:
            best, name = (score, lift), agent.name
    return name


def _comparison(agents: Mapping[str, AgentResult]) -> dict[str, object]:
    """comparison.json: per metric/dimension/overall, each agent's arms and lift (null unless succeeded)."""

    def cell(agent: AgentResult, w: float | None, wo: float | None, lift: LiftStat | None) -> dict[str, float | None]:
        if agent.execution_status != "succeeded":
            return {"with_skill": None, "without_skill": None, "lift": None}
        return {"with_skill": w, "without_skill": wo, "lift": lift.delta if lift else None}

    def lift_of(agent: AgentResult, group: str, key: str) -> LiftStat | None:
        if agent.lift is None:
            return None
        return getattr(agent.lift, group)[key] if group else getattr(agent.lift, key)

    return {
        "overall": {
            a.name: cell(a, a.with_skill.overall, a.without_skill.overall, lift_of(a, "", "overall"))
            for a in agents.values()
        },
        "metrics": {
            m: {
                a.name: cell(a, a.with_skill.metrics[m], a.without_skill.metrics[m], lift_of(a, "metrics", m))
                for a in agents.values()
            }
            for m in STANDARD_METRICS
        },
        "dimensions": {
            d: {
                a.name: cell(
                    a,
                    getattr(a.with_skill.dimensions, d),
                    getattr(a.without_skill.dimensions, d),
                    lift_of(a, "dimensions", d),
                )
                for a in agents.values()
            }
            for d in DIMENSIONS
        },
        "pass_at_k": {
            a.name: {
                "with_skill": a.with_skill.pass_at_k.rate if a.with_skill.pass_at_k else None,
                "without_skill": a.without_skill.pass_at_k.rate if a.without_skill.pass_at_k else None,
                "lift": a.lift.pass_at_k.delta if a.lift else None,
            }
            for a in agents.values()
        },
        "verdicts": {a.name: a.verdict for a in agents.values()},
    }


# ------------------------------------------------------------------------------------------------ exit code

EXIT_VERDICT_FAIL = 10
EXIT_VERDICT_NEUTRAL = 11
EXIT_VERDICT_INCONCLUSIVE = 12
EXIT_INCOMPLETE = 13
EXIT_BASELINE_ONLY = 14


def gate_failure_reason(result: AggregateResult) -> str | None:
    """Why `--block-on-agent-eval` would block this run, or None when it passes the gate."""
    if result.baseline_calibration:
        return "baseline calibration runs (--skip-with-skill) never satisfy the gate"
    if result.execution_status != "succeeded":
        return f"run {result.execution_status}"
    if not result.coverage.publication_complete:
        return "attempt coverage incomplete (partial selection or missing attempts)"
    if result.verdict != "pass":
        return f"verdict {result.verdict}"
    return None


def exit_code_for(result: AggregateResult, block: bool) -> int | None:
    """Session exit status demanded by `--block-on-agent-eval`; None means "leave pytest's status alone".

    Without `block` this is always None: the verdict is reported, not enforced. With `block`, a completed PASS with
    complete attempt coverage also gives None, and anything else a non-zero code outside pytest's own 0-5 range,
    checked in this order:

    - 14 `EXIT_BASELINE_ONLY`: a baseline calibration (`--skip-with-skill`) can never satisfy the gate;
    - 13 `EXIT_INCOMPLETE`: the run failed or was interrupted, or the selection/attempt coverage is incomplete
      (`-k`, `--max-cases`, missing attempts);
    - 10 `EXIT_VERDICT_FAIL`: a completed run whose verdict is FAIL;
    - 11 `EXIT_VERDICT_NEUTRAL`: a completed run whose verdict is NEUTRAL;
    - 12 `EXIT_VERDICT_INCONCLUSIVE`: a completed run whose skill never activated.

    Callers should keep a pytest status of 2-4 (interrupted, internal error, usage error) over these codes.
    """
    if not block or gate_failure_reason(result) is None:
        return None
    if result.baseline_calibration:
        return EXIT_BASELINE_ONLY
    if result.execution_status != "succeeded" or not result.coverage.publication_complete:
        return EXIT_INCOMPLETE
    return {
        "fail": EXIT_VERDICT_FAIL,
        "neutral": EXIT_VERDICT_NEUTRAL,
        "inconclusive": EXIT_VERDICT_INCONCLUSIVE,
    }.get(result.verdict, EXIT_VERDICT_NEUTRAL)
