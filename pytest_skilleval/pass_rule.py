"""The item's pass/fail rule: what the `skilleval_trial` fixture hands the call phase, and the call phase itself.

With-skill trials must reach the skill's pass threshold; baseline trials only report their score. A trial that
could not be scored never gets here: setup raises `TrialError` and the item is an ERROR, not a FAIL.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_skilleval.results.records import TrialRecord


class TrialFailed(AssertionError):
    """The with-skill score is below the pass threshold."""


@dataclass(frozen=True)
class TrialOutcome:
    """What the `skilleval_trial` fixture hands the call phase."""

    record: TrialRecord
    pass_threshold: float


def judge(outcome: TrialOutcome) -> None:
    """The call phase: with-skill trials must reach the threshold; baseline trials only report their score."""
    record, threshold = outcome.record, outcome.pass_threshold
    if record.arm in ("without_skill", "baseline_skill") or record.passed:
        return
    raise TrialFailed(
        f"{record.case} [{record.agent}-{record.arm}-{record.attempt}]: overall {record.overall:.4f} "
        f"< pass threshold {threshold:.2f}" + _weakest(record)
    )


def _weakest(record: TrialRecord) -> str:
    scored = {k: v for k, v in {**record.metrics, **record.custom_metrics}.items() if v is not None}
    if not scored:
        return ""
    lowest = sorted(scored.items(), key=lambda kv: kv[1])[:2]
    return " (lowest: " + ", ".join(f"{name} {value:.2f}" for name, value in lowest) + ")"
