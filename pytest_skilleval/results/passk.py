"""pass@k and pass^k per condition, with the stop-on-pass and required-attempts rules (pure)."""

from __future__ import annotations

from pytest_skilleval.results import stats
from pytest_skilleval.results.models import (
    AttemptOutcome,
    CasePassAtK,
    ChecksPassAtK,
    PassAtK,
    RunPlan,
)
from pytest_skilleval.results.trials import Condition, interval_pair, r4

# ------------------------------------------------------------------------------------------------- pass@k


def condition_pass_at_k(cond: Condition, plan: RunPlan) -> tuple[PassAtK, dict[str, bool]]:
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
        wilson95=interval_pair(stats.wilson_interval(n_passed, total)),
        unbiased=unbiased,
        pass_hat_k=hat,
        estimator_cases=est_cases,
        estimator_note=note,
        attempts_used=sum(c.attempts_used for c in cases.values()),
        max_attempts_possible=total * k,
        cases=cases,
    )
    return result, per_case_pass


def checks_pass_at_k(cond: Condition, plan: RunPlan) -> ChecksPassAtK | None:
    """pass@k of the checks metric: cases whose trials scored checks, passed when any attempt reached the threshold.
    None when no case of the condition has a checks score."""
    outcomes: list[bool] = []
    by_case = cond.by_case  # grouped once: per case, it would sort every trial again (quadratic)
    for case in cond.cases:
        scores = [t.metrics.get("checks") for t in by_case.get(case, []) if t.scored]
        scored = [s for s in scores if s is not None]
        if scored:
            outcomes.append(any(round(s, 4) >= plan.pass_threshold for s in scored))
    if not outcomes:
        return None
    passed = sum(outcomes)
    return ChecksPassAtK(
        k=plan.n_attempts,
        passed_cases=passed,
        total_cases=len(outcomes),
        rate=r4(passed / len(outcomes)),
        wilson95=interval_pair(stats.wilson_interval(passed, len(outcomes))),
    )
