"""How many attempts a run needs: the attempts per case that would detect a lift at 80% power (pure).

Skill Lift is the mean over n cases of d_i = (with-skill case mean - without-skill case mean). With k attempts per
case and arm, Var(d_i) = s2_between + 2 * s2_within / k: `s2_within` is the spread of one case's attempts (pooled
over cases and arms), `s2_between` the spread of the cases' true differences, which no number of attempts removes.
A two-sided paired test at alpha 0.05 detects a lift `delta` with power 0.8 when
n * delta^2 / Var(d_i) >= (z_0.975 + z_0.8)^2 (normal approximation), so

    k >= 2 * s2_within / (n * delta^2 / (z_0.975 + z_0.8)^2 - s2_between)

and when the bracket is not positive, more attempts cannot get there: only more cases can (their number is given).
`s2_within` needs at least two attempts somewhere; `s2_between` is the observed variance of d_i less its within
part (method of moments, floored at zero).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any

from pytest_skilleval.results.models import PowerSuggestion
from pytest_skilleval.results.trials import Condition, ScoredTrial, r4

ALPHA = 0.05
POWER = 0.8
MAX_SUGGESTED = 100  # the most attempts a run accepts (skill.settings.MAX_ATTEMPTS): never suggest more


def _z_sum() -> float:
    normal = NormalDist()
    return normal.inv_cdf(1 - ALPHA / 2) + normal.inv_cdf(POWER)


def _scores(items: Sequence[ScoredTrial]) -> list[float]:
    return [t.overall for t in items if t.scored and t.overall is not None]


def suggest_attempts(
    with_skill: Condition, without_skill: Condition, observed: float | None, min_lift: float | None
) -> PowerSuggestion | None:
    """The suggestion for one agent, or None when there is no lift to aim at (none observed, none asked for)."""
    target = min_lift if min_lift is not None else (abs(observed) if observed else None)
    if not target:
        return None
    per_case = []
    within_ss, within_df, counts = 0.0, 0, []
    with_cases, without_cases = with_skill.by_case, without_skill.by_case  # grouped once, not once per case
    for case in with_skill.cases:
        w, wo = _scores(with_cases.get(case, [])), _scores(without_cases.get(case, []))
        if not w or not wo:
            continue
        per_case.append(math.fsum(w) / len(w) - math.fsum(wo) / len(wo))
        for values in (w, wo):
            counts.append(len(values))
            mean = math.fsum(values) / len(values)
            within_ss += math.fsum((v - mean) ** 2 for v in values)
            within_df += len(values) - 1
    n = len(per_case)
    source = "min_lift" if min_lift is not None else "observed"
    base: dict[str, Any] = {
        "target_lift": r4(target),
        "target_source": source,
        "n_cases": n,
        "power": POWER,
        "alpha": ALPHA,
    }
    if n < 2:
        return PowerSuggestion(**base, note="fewer than 2 paired cases: no spread to plan from")
    mean_d = math.fsum(per_case) / n
    var_d = math.fsum((d - mean_d) ** 2 for d in per_case) / (n - 1)
    attempts_now = round(math.fsum(counts) / len(counts))
    z2 = _z_sum() ** 2
    if within_df == 0:
        needed = math.ceil(z2 * var_d / target**2)
        return PowerSuggestion(
            **base,
            attempts_now=attempts_now,
            cases_needed=max(needed, 2),
            note="one attempt per case: the spread of attempts is unknown (run --n-attempts 2 or more to plan "
            "attempts); the cases needed at today's spread are given",
        )
    s2_within = within_ss / within_df
    s2_between = max(0.0, var_d - 2 * s2_within / attempts_now)
    room = n * target**2 / z2 - s2_between
    fields: dict[str, Any] = {
        **base,
        "attempts_now": attempts_now,
        "within_case_sd": r4(math.sqrt(s2_within)),
        "between_case_sd": r4(math.sqrt(s2_between)),
    }
    if s2_within == 0:
        if room >= 0:
            return PowerSuggestion(**fields, suggested_attempts=1, note="attempts agree exactly: one is enough")
    elif room > 0:
        k = max(1, math.ceil(2 * s2_within / room))
        if k <= MAX_SUGGESTED:
            return PowerSuggestion(**fields, suggested_attempts=k)
    needed = math.ceil(z2 * (s2_between + 2 * s2_within / attempts_now) / target**2)
    return PowerSuggestion(
        **fields,
        cases_needed=max(needed, n + 1),
        note="the cases differ more than attempts can average out: more cases, not more attempts, are needed",
    )
