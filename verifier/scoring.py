"""A trial's dimensions and overall score from its evaluator scores (pure; shared by the verifier and the
session aggregate so both compute them one way).

Dimensions: Security = security; Correctness = accuracy; Discoverability = skill_execution;
Effectiveness = (goal_accuracy + behavior_check) / 2; Efficiency = skill_efficiency. A dimension is scored only when
all its evaluators are; the overall is the mean of the scored dimensions, None when none is (missing is not zero).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

SCORE_POLICY = "skill-evaluator-dimension-mean-v1"
# custom_only: a trial's overall is the custom grader's own overall.
CUSTOM_SCORE_POLICY = "custom-overall-v1"
# Dimension -> {evaluator: weight}. A dimension is scored only when every one of its evaluators is.
DIMENSION_SOURCES: dict[str, dict[str, float]] = {
    "security": {"security": 1.0},
    "correctness": {"accuracy": 1.0},
    "discoverability": {"skill_execution": 1.0},
    "effectiveness": {"goal_accuracy": 0.5, "behavior_check": 0.5},
    "efficiency": {"skill_efficiency": 1.0},
}


def clean_score(value: object) -> float | None:
    """A usable score in [0, 1], or None. Non-finite and non-numeric values are rejected, never zeroed."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if not math.isfinite(number):
        return None
    return max(0.0, min(1.0, number))


def dimension_scores(metrics: Mapping[str, float | None]) -> dict[str, float | None]:
    """The five dimensions from (already clean) evaluator scores; a dimension with any evaluator missing is None."""
    out: dict[str, float | None] = {}
    for dim, sources in DIMENSION_SOURCES.items():
        values = [metrics.get(name) for name in sources]
        if any(v is None for v in values):
            out[dim] = None
        else:
            out[dim] = math.fsum(w * v for w, v in zip(sources.values(), values, strict=True))  # type: ignore[operator]
    return out


def overall_from_dimensions(dimensions: Mapping[str, float | None]) -> float | None:
    """Equal-weight mean of the scored dimensions (all five when all are scored); None if none is."""
    present = [v for v in dimensions.values() if v is not None]
    return math.fsum(present) / len(present) if present else None


def overall_basis(grading_mode: str, metrics: Mapping[str, float | None]) -> list[str]:
    """The dimensions the overall is the mean of; fewer than five means the overall is partial."""
    if grading_mode == "custom_only":
        return []
    dims = dimension_scores({k: clean_score(v) for k, v in metrics.items()})
    return [name for name, value in dims.items() if value is not None]


def trial_overall(grading_mode: str, metrics: Mapping[str, float | None], custom_overall: float | None) -> float | None:
    """custom_only: the grader's overall; otherwise the mean of the scored dimensions. Rounded to 4 places."""
    if grading_mode == "custom_only":
        overall = clean_score(custom_overall)
    else:
        overall = overall_from_dimensions(dimension_scores({k: clean_score(v) for k, v in metrics.items()}))
    return None if overall is None else round(overall, 4)


def passes(overall: float | None, threshold: float) -> bool | None:
    """round(overall, 4) >= threshold; None when unscored."""
    if overall is None:
        return None
    return round(overall, 4) >= threshold


def correctness_gates(
    grading_mode: str, metrics: Mapping[str, float | None], custom_overall: float | None
) -> dict[str, float | None]:
    """The scores that must reach the pass threshold beside the overall, because they say whether the output was
    right: the case's `checks` (when it has checks), and in default_plus_custom with no accuracy judge the custom
    grader's own overall. None means unscored (every check errored): that gate drops out."""
    gates: dict[str, float | None] = {}
    if "checks" in metrics:
        gates["checks"] = clean_score(metrics["checks"])
    custom = clean_score(custom_overall)
    if grading_mode == "default_plus_custom" and clean_score(metrics.get("accuracy")) is None and custom is not None:
        gates["custom overall"] = custom
    return gates


def item_passes(overall: float | None, threshold: float, gates: Mapping[str, float | None]) -> bool | None:
    """The overall and every scored correctness gate reach the threshold (rounded to 4 places); None when unscored."""
    if overall is None:
        return None
    return passes(overall, threshold) is True and all(passes(v, threshold) is not False for v in gates.values())


def failed_gates(threshold: float, gates: Mapping[str, float | None]) -> list[str]:
    """The gates below the threshold, as `name value`."""
    return [f"{name} {value:.4f}" for name, value in gates.items() if passes(value, threshold) is False]
