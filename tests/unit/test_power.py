"""The attempts suggestion against hand-computed values (80% power, two-sided alpha 0.05)."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from pytest_skilleval.results.aggregate import aggregate
from pytest_skilleval.results.summary import render_summary
from tests.unit.test_aggregate import both, plan

Z2 = (NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)) ** 2  # 7.849


def _records(offsets: list[float]) -> list:
    """Per case two attempts per arm, 0.2 apart (within-case variance 0.02); the case's lift is 0.3 + offset.
    Overall is the security score alone here (the other metrics unscored)."""
    records = []
    for i, offset in enumerate(offsets):
        case = f"c{i + 1}"
        records += both(case, 0.6 + offset, 0.3, attempt=1) + both(case, 0.4 + offset, 0.1, attempt=2)
    return records


def test_attempts_for_a_lift_the_user_asks_about() -> None:
    cases = [f"c{i}" for i in range(1, 7)]
    result = aggregate(_records([0.0] * 6), plan(cases, n_attempts=2, min_lift=0.05))
    power = result.agents["codex"].power
    assert power is not None and power.target_source == "min_lift" and power.n_cases == 6
    # Every case has the same lift, so the between-case spread is 0: k >= 2 * 0.02 / (6 * 0.05^2 / Z2).
    assert power.within_case_sd == round(math.sqrt(0.02), 4) and power.between_case_sd == 0.0
    assert power.suggested_attempts == math.ceil(2 * 0.02 / (6 * 0.05**2 / Z2)) == 21
    assert power.attempts_now == 2
    text = " ".join(" ".join(render_summary(result, None, 100)).split())
    assert "to detect a lift of 0.0500 (min-lift) over 6 cases: 21 attempts per case and arm (now 2)" in text


def test_the_observed_lift_and_cases_that_attempts_cannot_fix() -> None:
    cases = [f"c{i}" for i in range(1, 7)]
    observed = aggregate(_records([0.0] * 6), plan(cases, n_attempts=2)).agents["codex"].power
    assert observed is not None and observed.target_source == "observed" and observed.target_lift == 0.3
    assert observed.suggested_attempts == 1  # 0.3 over six cases with this little spread
    # Lifts of 0.3 +- 0.3 from case to case: at a 0.05 target no number of attempts is enough.
    spread = (
        aggregate(_records([0.3, -0.3, 0.3, -0.3, 0.3, -0.3]), plan(cases, n_attempts=2, min_lift=0.05))
        .agents["codex"]
        .power
    )
    assert spread is not None and spread.suggested_attempts is None
    var_d = 6 * 0.3**2 / 5
    assert spread.cases_needed == math.ceil(Z2 * var_d / 0.05**2)
    assert spread.note and "more cases, not more attempts" in spread.note


def test_the_aggregate_groups_trials_by_case_a_fixed_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each condition's trials are grouped by case a few times, not once per case (which sorted every trial again
    for each case: 1,000 cases took seconds at the session's end)."""
    from pytest_skilleval.results import trials

    calls = []
    group = trials.trials_by_case

    def counting(found):
        calls.append(1)
        return group(found)

    monkeypatch.setattr(trials, "trials_by_case", counting)
    counts = []
    for n in (5, 40):
        calls.clear()
        cases = [f"c{i}" for i in range(1, n + 1)]
        aggregate(_records([0.0] * n), plan(cases, n_attempts=2, min_lift=0.05))
        counts.append(len(calls))
    assert counts[0] == counts[1], counts
