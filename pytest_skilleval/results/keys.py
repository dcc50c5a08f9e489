"""The names a trial is known by: its arms, its status words, its key and the report properties that carry records.

Plain data without pydantic models, so the settings, the run plan and collection name trials without importing the
record and result models (`records`, `models`), which only a run that reports trials needs.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

Arm = Literal["with_skill", "without_skill", "baseline_skill"]
ARMS: tuple[Arm, Arm] = ("with_skill", "without_skill")
# Every arm a run may hold: the skill under test, no skill, and a previous version of the skill (--baseline-skill).
ALL_ARMS: tuple[Arm, Arm, Arm] = ("with_skill", "without_skill", "baseline_skill")
# "scored": a usable overall; "unscored": the trial ran but nothing could be scored (missing is not zero);
# "error": Harbor, the agent or the grader failed; "skipped": not run (no grader, selection, ...).
TrialStatus = Literal["scored", "unscored", "error", "skipped"]

# The report's user property holding a case trial's record, and the one holding a trigger trial's record.
USER_PROPERTY_KEY = "skilleval_trial"
TRIGGER_PROPERTY_KEY = "skilleval_trigger"


class TrialKey(NamedTuple):
    """Which trial of a run, in one order everywhere: a resumed run's lookup, the run folder's file, the
    aggregate's duplicates and the planned grid all key trials by it."""

    case: str
    agent: str
    arm: str
    attempt: int

    @property
    def condition(self) -> tuple[str, str, str]:
        """The case, agent and arm: what --stop-on-pass and the per-case summary group attempts by."""
        return (self.case, self.agent, self.arm)


TriggerKey = tuple[str, str, int]  # (query, agent, attempt)
