"""A trial's dimensions and overall score from its evaluator scores (pure).

Dimensions: Security = security; Correctness = accuracy; Discoverability = skill_execution;
Effectiveness = (goal_accuracy + behavior_check) / 2; Efficiency = skill_efficiency. A dimension is scored only when
all its evaluators are; the overall is the mean of the scored dimensions, None when none is (missing is not zero).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

SCORE_POLICY = "skill-evaluator-dimension-mean-v1"
DIMENSIONS: dict[str, dict[str, float]] = {
    "security": {"security": 1.0},
    "correctness": {"accuracy": 1.0},
    "discoverability": {"skill_execution": 1.0},
    "effectiveness": {"goal_accuracy": 0.5, "behavior_check": 0.5},
    "efficiency": {"skill_efficiency": 1.0},
}


def clean_score(value: object) -> float | None:
    """A finite number clamped to [0, 1]; anything else (bool, NaN, text, None) is unscored."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    return min(1.0, max(0.0, float(value)))


def dimension_scores(metrics: Mapping[str, float | None]) -> dict[str, float | None]:
    scores: dict[str, float | None] = {}
    for dimension, sources in DIMENSIONS.items():
        values = [clean_score(metrics.get(metric)) for metric in sources]
        if any(value is None for value in values):
            scores[dimension] = None
        else:
            scores[dimension] = round(sum(w * v for w, v in zip(sources.values(), values)), 4)
    return scores


def mean_or_none(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return round(sum(present) / len(present), 4) if present else None


def standard_overall(metrics: Mapping[str, float | None]) -> float | None:
    return mean_or_none(list(dimension_scores(metrics).values()))


def trial_overall(
    grading_mode: str, metrics: Mapping[str, float | None], custom_overall: float | None
) -> float | None:
    """custom_only: the grader's overall; otherwise the mean of the scored dimensions."""
    if grading_mode == "custom_only":
        return clean_score(custom_overall)
    return standard_overall(metrics)


def passes(overall: float | None, threshold: float) -> bool | None:
    """round(overall, 4) >= threshold; None when unscored."""
    if overall is None:
        return None
    return round(overall, 4) >= threshold
