"""skill_execution (the Discoverability dimension): did the agent find, load and use the right skill?

Positive cases score the mean of four sub-scores, or 0.0 when the skill never activated (a skill that was never
used earns nothing for the commands around it); negative controls score 1.0 only when the trajectory proves the
skill under test was not used. `details["activation"]["score"]` is the activation sub-score aggregation reads for
INCONCLUSIVE: a float when the trajectory confirms it, None when there is no activation to judge (negative control,
unlabeled case, no expected skill, no trajectory).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verifier.checks._execution_parts import (
    check_activation,
    check_error_recovery,
    check_script_execution,
    check_workflow_order,
)
from verifier.checks._harness_skills import HarnessLoad, harness_loads, installed_loads, loads_of, other_loads
from verifier.checks._invocation import InvocationResult, check_invocation
from verifier.checks._skill_dirs import skills_dirs_for
from verifier.checks.skill_entry import (
    acceptable_skills,
    evaluated_skill,
    expected_script,
    expected_skill,
    skill_under_test,
)
from verifier.checks.skill_entry import should_trigger as _should_trigger
from verifier.evidence import NO_TRAJECTORY, MetricResult, TrajectoryEvidence

SUB_SCORES = ("activation", "script_execution", "workflow_order", "error_recovery")


def should_trigger(entry: Mapping[str, Any]) -> bool | None:
    """True: the skill should be used; False: a negative control; None: unlabeled."""
    return _should_trigger(entry)


def _no_activation(reason: str) -> dict[str, Any]:
    return {"score": None, "reason": reason}


def _invocation_detail(result: InvocationResult, target: str, trigger: bool | None) -> dict[str, Any]:
    """The invocation detail, worded for what the case expects: `passed` is whether the skill's use (or its
    absence) is what the case asks for, None when the case asks nothing or use could not be determined."""
    used = result.triggered
    if used is None:
        passed, reason = None, result.reason
    elif trigger is None:
        passed = None
        reason = f"Skill '{target}' was {'used' if used else 'not used'} (the case does not say whether it should be)"
    elif trigger:
        passed = used
        reason = (
            f"Skill '{target}' was used, as the case expects"
            if used
            else f"Skill '{target}' was not used, though the case expects it"
        )
    else:
        passed = not used
        reason = (
            f"Skill '{target}' was used, though this negative control expects it unused"
            if used
            else f"Skill '{target}' was not used, as this negative control expects"
        )
    return {
        "target": target,
        "used": used,
        "expected": trigger,
        "passed": passed,
        "reason": reason,
        "evidence": result.evidence[:10],
    }


def _skill_invoked(
    evidence: TrajectoryEvidence,
    entry: Mapping[str, Any],
    loads: list[HarnessLoad],
    trigger: bool | None,
    skills_dirs: tuple[str, ...],
) -> tuple[bool | None, dict[str, Any]]:
    """Invocation of the skill under test, for both arms: True used, False proven unused, None unknown.

    A negative control reads a same-named skill anywhere as use (it must prove the skill unused); otherwise only
    the skill in the trial's skills folders is the skill under test, as activation reads it."""
    target = skill_under_test(entry)
    if not target:
        return None, {"passed": None, "reason": "no skill under test"}
    result = check_invocation(evidence.tool_calls, target, loads, None if trigger is False else skills_dirs)
    return result.triggered, _invocation_detail(result, target, trigger)


def check_skill_execution(evidence: TrajectoryEvidence, entry: Mapping[str, Any]) -> MetricResult:
    """Score one trial's skill use; see the module docstring for the activation sub-score contract."""
    trigger = should_trigger(entry)
    base: dict[str, Any] = {"should_trigger": trigger, "negative_control": trigger is False}
    if not evidence.usable:
        return MetricResult(
            score=0.0,
            details={
                **base,
                "error": NO_TRAJECTORY,
                "trajectory_detail": evidence.detail,
                "activation": _no_activation(NO_TRAJECTORY),
            },
        )
    skills_dirs = skills_dirs_for(evidence.agent_name, entry)
    every_load = harness_loads(evidence)
    loads = installed_loads(every_load, skills_dirs)
    invoked, invocation = _skill_invoked(evidence, entry, loads, trigger, skills_dirs)
    base.update({"skill_invoked": invoked, "invocation": invocation, "skills_dirs": list(skills_dirs)})
    if others := other_loads(every_load, skills_dirs):
        base["other_skills_loaded"] = others[:10]

    if trigger is None:
        return MetricResult(
            score=1.0,
            details={
                **base,
                "skipped": True,
                "message": "No expected_skill -- skipped",
                "activation": _no_activation("unlabeled case (no should_trigger or expected_skill)"),
            },
        )
    if trigger is False:
        return _negative(evidence, entry, base, loads, skills_dirs)

    expected = expected_skill(entry)
    if not expected:
        return MetricResult(
            score=1.0,
            details={
                **base,
                "skipped": True,
                "message": "Positive case without expected_skill -- skipped",
                "activation": _no_activation("no expected_skill to look for"),
            },
        )
    calls = evidence.tool_calls
    accepted = acceptable_skills(entry)
    preloaded = any(loads_of(loads, name) for name in accepted)
    if not calls and not preloaded:
        return MetricResult(
            score=0.0,
            details={
                **base,
                "message": "No tool calls",
                "activation": {"score": 0.0, "passed": False, "message": "No tool calls"},
            },
        )
    parts = {
        "activation": check_activation(calls, accepted, loads, skills_dirs),
        "script_execution": check_script_execution(calls, expected_script(entry)),
        "workflow_order": check_workflow_order(calls, expected, preloaded),
        "error_recovery": check_error_recovery(calls),
    }
    mean = round(sum(parts[name]["score"] for name in SUB_SCORES) / len(SUB_SCORES), 4)
    summary = ", ".join(f"{name}={parts[name]['score']}" for name in SUB_SCORES)
    if parts["activation"]["score"] == 0.0:
        # A positive case whose skill never activated scores zero, however well unrelated commands went.
        return MetricResult(
            score=0.0,
            details={
                **base,
                **parts,
                "sub_score_mean": mean,
                "activation_gate": True,
                "message": f"Expected skill not activated, so skill_execution is 0.0 ({summary})",
            },
        )
    return MetricResult(score=mean, details={**base, **parts, "sub_score_mean": mean, "message": summary})


def _negative(
    evidence: TrajectoryEvidence,
    entry: Mapping[str, Any],
    base: dict[str, Any],
    loads: list[HarnessLoad],
    skills_dirs: tuple[str, ...],
) -> MetricResult:
    """A negative control: 1.0 when the skill under test provably stayed unused, else 0.0."""
    activation = _no_activation("negative control: activation is not expected")
    target = evaluated_skill(entry)
    if not target:
        # The trusted identity is missing: the grader cannot verify the control. That is our input problem, not the
        # agent's behaviour, so the case is unscored rather than failed (it can never pass either way).
        return MetricResult(
            score=None,
            details={
                **base,
                "activation": activation,
                "message": "Negative control needs the trusted evaluated_skill (skill folder name); unscored",
            },
        )
    if not evidence.tool_calls and not loads_of(loads, target):
        return MetricResult(
            score=1.0,
            details={
                **base,
                "activation": activation,
                "message": "No tool calls: skill not triggered",
                "negative_check": {"passed": True, "target": target},
            },
        )
    result = check_invocation(evidence.tool_calls, target, loads)
    negative_check = {
        "passed": result.passed,
        "target": target,
        "reason": result.reason,
        "evidence": result.evidence[:10],
    }
    return MetricResult(
        score=1.0 if result.passed else 0.0,
        details={**base, "activation": activation, "message": result.reason, "negative_check": negative_check},
    )
