"""Scored trials and conditions: a record's scores cleaned and its overall recomputed under one policy (pure)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pytest_skilleval.results import stats
from pytest_skilleval.results.models import (
    DIMENSIONS,
    Band,
    Dimensions,
    RunPlan,
    TokenCounts,
    TrialEntry,
)
from pytest_skilleval.results.records import Arm, TrialRecord
from verifier.evidence import REPORTED_METRICS, STANDARD_METRICS
from verifier.scoring import clean_score, dimension_scores, item_passes, overall_from_dimensions

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
class ScoredTrial:
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


def score_trial(record: TrialRecord, plan: RunPlan) -> ScoredTrial:
    metrics = {name: clean_score(record.metrics.get(name)) for name in REPORTED_METRICS}
    custom = {k: v for k, v in ((k, clean_score(v)) for k, v in record.custom_metrics.items()) if v is not None}
    notes: list[str] = []
    mode = record.grading_mode or plan.grading_mode
    custom_scored = mode == CUSTOM_ONLY or (
        all(metrics[name] is None for name in STANDARD_METRICS) and clean_score(record.overall) is not None
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
    passed = item_passes(overall, plan.pass_threshold, record.gates())
    return ScoredTrial(record, metrics, custom, dims, overall, scored, passed, notes=notes)


def trial_entry(t: ScoredTrial) -> TrialEntry:
    rec = t.record
    tokens = None
    if rec.tokens is not None:
        tk = rec.tokens
        total = tk.prompt + tk.completion if tk.prompt is not None and tk.completion is not None else None
        tokens = TokenCounts(
            prompt=tk.prompt,
            completion=tk.completion,
            cache=tk.cache,
            total=total,
            cost_usd=r4(tk.cost_usd),
            cost_source=tk.cost_source,
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
        checks=rec.checks,
        overall_basis=None
        if t.overall is None or rec.grading_mode == CUSTOM_ONLY
        else [d for d, v in t.dims.items() if v is not None],
        activation=r4(clean_score(rec.activation)),
        negative_control=rec.negative_control,
        judge_models=dict(rec.judge_models),
        tokens=tokens,
        judge_cost_usd=r4(rec.judge_cost_usd),
        seconds=r4(rec.agent_seconds),
        error=rec.error,
        reason=rec.reason,
        nodeid=rec.nodeid,
        counted=t.counted,
        notes=t.notes,
    )


# ------------------------------------------------------------------------------------------------ helpers


def interval_pair(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [r4(interval[0]), r4(interval[1])]  # type: ignore[list-item]


def mean_of(values: Iterable[float | None]) -> float | None:
    return stats.mean([v for v in values if v is not None])


def total_of(values: Sequence[int | float | None]) -> int | float | None:
    """The sum, or None when there is nothing to add or any part is unknown (missing is never zero)."""
    return None if not values or any(v is None for v in values) else sum(values)  # type: ignore[arg-type]


def trials_by_case(trials: Iterable[ScoredTrial]) -> dict[str, list[ScoredTrial]]:
    out: dict[str, list[ScoredTrial]] = defaultdict(list)
    for t in trials:
        out[t.record.case].append(t)
    for items in out.values():
        items.sort(key=lambda t: t.record.attempt)
    return out


def required_attempts(case_trials: Sequence[ScoredTrial], plan: RunPlan) -> int:
    """Attempts a case must have: all of them, or up to the first pass under stop_on_pass."""
    if plan.stop_on_pass:
        for t in case_trials:
            if t.scored and t.passed:
                return t.record.attempt
    return plan.n_attempts


# ------------------------------------------------------------------------------------------- conditions


@dataclass
class Condition:
    agent: str
    arm: Arm
    status: str
    errors: list[str]
    cases: list[str]  # cases in scope for this condition
    trials: list[ScoredTrial]  # counted trials that ran, in scope
    expected_attempts: int
    # A configured judge failed on one of its trials: the condition publishes no scores (a partial judge is no score).
    withheld: bool = False

    @property
    def scored(self) -> list[ScoredTrial]:
        return [] if self.withheld else [t for t in self.trials if t.scored]

    @property
    def by_case(self) -> dict[str, list[ScoredTrial]]:
        return trials_by_case(self.trials)


def build_condition(agent: str, arm: Arm, ran: Sequence[ScoredTrial], scope: list[str], plan: RunPlan) -> Condition:
    if arm not in plan.arms:
        return Condition(agent, arm, "skipped", [f"{arm} arm not run"], [], [], 0)
    mine = [t for t in ran if t.record.agent == agent and t.record.arm == arm and t.record.case in scope]
    if not mine and not plan.selection_complete:
        return Condition(agent, arm, "skipped", [f"{arm} arm not selected"], [], [], 0)
    errors: list[str] = []
    by_case = trials_by_case(mine)
    expected = 0
    missing = 0
    for case in scope:
        need = required_attempts(by_case.get(case, []), plan)
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
    judge_failed = [t for t in mine if t.record.judge_failures]
    if judge_failed:
        errors.append(f"{len(judge_failed)} trial(s) with a failed LLM judge: no scores published for this arm")
    if not scope:
        errors.append("no cases in scope")
    status = "failed" if errors else "succeeded"
    return Condition(agent, arm, status, errors, scope, mine, expected, withheld=bool(judge_failed))
