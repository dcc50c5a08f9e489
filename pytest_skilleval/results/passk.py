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


def estimators_text(p: PassAtK) -> str | None:
    """What an arm's unbiased pass@k / pass^k say, in one line that stands under its pass@k rate: their values, how
    many cases each k averages when some have fewer than k scored attempts, and, when no case has a scored attempt,
    that the rate counts every case as not passed (passed cases / expected cases) while the estimators are N/A.
    Without this, `0.0000 (0/1)` beside "cases ... are left out" reads as if the errored case had been scored 0."""
    if p.stop_on_pass or p.total_cases == 0:
        return p.estimator_note
    if all(value is None for value in p.unbiased.values()):
        if p.total_cases == 1:
            what = "the case has no scored attempt (its trials errored or went unscored), so the rate counts it"
        else:
            what = f"none of the {p.total_cases} cases has a scored attempt, so the rate counts each"
        return f"{what} as not passed; unbiased pass@k / pass^k: N/A (they need k scored attempts per case)"

    def fmt(value: float | None) -> str:
        return "N/A" if value is None else f"{value:.4f}"

    values = "  ".join(f"@{k} {fmt(v)}/{fmt(p.pass_hat_k.get(k))}" for k, v in p.unbiased.items())
    text = f"unbiased pass@k / pass^k: {values}"
    short = {k: n for k, n in p.estimator_cases.items() if n < p.total_cases}
    if short:
        over = ", ".join(f"@{k} {n} of {p.total_cases}" for k, n in short.items())
        text += f" (cases with k scored attempts: {over}; the others are left out)"
    return text
