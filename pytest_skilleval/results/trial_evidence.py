"""What one trial's drill-down in report.html shows from its trial file: the trajectory as steps, the security
findings, the grader's details and output, the judged assertions, the workspace changes (redacted and capped).

Built from the trial file's document, whoever holds it: the report reads the file back, and the session, which has
the same bytes in hand when it writes the file as the trial ends, builds it then (`early_results.py`), so the
session's end does not read every trial file again. Imports neither Jinja nor pygal: the session builds these while
trials run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_skilleval.results.assertion_rates import judged_results
from pytest_skilleval.results.redact import cap_text, redact_text, redact_value
from pytest_skilleval.results.run_folder import TrialContent
from pytest_skilleval.results.trajectory_view import StepView, trajectory_steps
from verifier.check_host import WorkspaceDiff
from verifier.reward import RichReward

__all__ = ["MAX_DETAILS_CHARS", "TrialEvidence", "trial_evidence"]

MAX_DETAILS_CHARS = 20_000
MAX_REASON_CHARS = 2_000  # one assertion's text or the judge's reason for it


@dataclass(frozen=True)
class TrialEvidence:
    steps: list[StepView]
    steps_omitted: int
    has_trajectory: bool
    findings: list[dict[str, str]]
    security_reason: str | None
    details_json: str | None
    grader_output: str | None
    assertion_results: list[dict[str, Any]]
    workspace_diff: WorkspaceDiff | None


def _findings(rich: RichReward | None) -> tuple[list[dict[str, str]], str | None]:
    security = rich.section("security") if rich is not None else {}
    if not security:
        return [], None
    found = listed if isinstance(listed := security.get("findings"), list) else []
    keys = ("type", "severity", "source", "message", "evidence")
    rows = [{key: redact_text(str(item.get(key, ""))) for key in keys} for item in found if isinstance(item, dict)]
    reason = security.get("reason")
    return rows, redact_text(str(reason)) if reason is not None else None


def _assertion_results(rich: RichReward | None) -> list[dict[str, Any]]:
    """behavior_check's verdict per assertion in one trial, with the judge's reason (redacted on output)."""
    results = judged_results(rich.details) if rich is not None else None
    rows = []
    for index, item in enumerate(results or [], start=1):
        text = item.get("assertion")
        reason = item.get("reason")
        rows.append(
            {
                "text": cap_text(str(text), MAX_REASON_CHARS) if isinstance(text, str) else f"assertion {index}",
                "passed": item.get("passed") is True,
                "reason": cap_text(str(reason), MAX_REASON_CHARS) if isinstance(reason, str) else "",
            }
        )
    return rows


def trial_evidence(document: Mapping[str, Any]) -> TrialEvidence:
    """The drill-down's parts from a trial file's document (`{}` for a trial whose file is missing or unreadable)."""
    content = TrialContent(dict(document))
    rich = content.rich_reward()
    trajectory = content.trajectory()
    steps, omitted = trajectory_steps(trajectory)
    findings, reason = _findings(rich)
    details = None
    if rich is not None:
        text = json.dumps(redact_value(rich.details), indent=2, ensure_ascii=False, default=str)
        details = cap_text(text, MAX_DETAILS_CHARS, keep="head")
    output = content.grader_output()
    return TrialEvidence(
        steps=steps,
        steps_omitted=omitted,
        has_trajectory=trajectory is not None,
        findings=findings,
        security_reason=reason,
        details_json=details,
        grader_output=cap_text(redact_text(output), MAX_DETAILS_CHARS) if output is not None else None,
        assertion_results=_assertion_results(rich),
        workspace_diff=rich.workspace_diff if rich is not None else None,
    )
