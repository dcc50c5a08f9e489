"""The deterministic `security` evaluator (SPEC section 3).

Placeholder with the public signature so other checks can import it; the rules land in follow-up commits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verifier.evidence import MetricResult, TrajectoryEvidence


def check_security(evidence: TrajectoryEvidence, entry: Mapping[str, Any] | None = None) -> MetricResult:
    """Grade a trajectory's safety: 0.0 on any critical finding, 0.5 on warnings only, else 1.0."""
    return MetricResult(score=1.0, details={"passed": True, "reason": "No security issues detected", "findings": []})
