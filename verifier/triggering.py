"""Did a trigger item's agent load the skill under test, and which of the other installed skills did it load?

The verdict is the activation detector's, `check_skill_execution`, asked as for a positive case of each skill in
turn: the skill counts as loaded when the detector saw it used (`skill_invoked`) and its activation sub-score
confirms a load. Nothing here second-guesses the detector: whatever it counts as a load (a read of SKILL.md, a run
of its scripts, the harness's own skill tool) is what a trigger is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from verifier.checks.skill_execution import check_skill_execution
from verifier.evidence import TrajectoryEvidence

TRIGGER_FILE = "trigger.json"


class TriggerVerdict(BaseModel):
    """What one trigger trial's trajectory says: loaded or not (None: the detector could not tell)."""

    skill: str
    triggered: bool | None
    reason: str
    evidence: list[dict[str, Any]] = Field(default_factory=list, description="The detector's evidence, capped.")
    distractors_loaded: list[str] = Field(default_factory=list, description="Other installed skills it loaded.")
    trajectory_source: str | None = None


def _loaded(evidence: TrajectoryEvidence, skill: str) -> tuple[bool | None, str, list[dict[str, Any]]]:
    """The detector's verdict for one skill: (loaded, reason, evidence)."""
    entry = {"id": "trigger", "should_trigger": True, "expected_skill": skill, "evaluated_skill": skill}
    details = check_skill_execution(evidence, entry).details
    invocation = details.get("invocation") or {}
    activation = details.get("activation") or {}
    invoked = details.get("skill_invoked")
    reason = str(invocation.get("reason") or activation.get("message") or details.get("message") or "")
    found = list(invocation.get("evidence") or [])[:10]
    if invoked is None:
        return None, reason or f"could not determine whether {skill!r} was loaded", found
    score = activation.get("score")
    if invoked and isinstance(score, (int, float)) and score > 0:
        return True, str(activation.get("message") or reason), found
    if invoked:
        return False, f"Skill '{skill}' was named but no load of it was confirmed ({activation.get('message')})", found
    # The detector was asked as for a positive case, and words its reason so ("though the case expects it"); a
    # query's verdict says only what the agent did, since a should-not-trigger query wants exactly this.
    return False, f"Skill '{skill}' was not used", found


def trigger_verdict(evidence: TrajectoryEvidence, skill: str, distractors: Sequence[str] = ()) -> TriggerVerdict:
    """The verdict for `skill` and every distractor it loaded, from one trial's trajectory."""
    if not evidence.usable:
        return TriggerVerdict(skill=skill, triggered=None, reason=evidence.detail or "no usable trajectory")
    triggered, reason, found = _loaded(evidence, skill)
    loaded = [name for name in distractors if name != skill and _loaded(evidence, name)[0] is True]
    return TriggerVerdict(
        skill=skill,
        triggered=triggered,
        reason=reason,
        evidence=found,
        distractors_loaded=loaded,
        trajectory_source=evidence.source,
    )
