"""A trial's result.json entry made as the trial ends, so its block of report.html can be rendered then.

The session's end aggregates every record into result.json's trial entries and renders a block of report.html for
each (half of the report's rendering at 1,000 trials, all of it after the last trial). A trial's entry is its record
scored under the skill's grading mode and pass threshold (`score_trial`, `trial_entry`), and counted unless the
record falls outside the plan or is superseded (`aggregate`), which a session's own trials are not. So the session
makes the same entry as each trial ends and the block is rendered ahead; the report uses it only where its own entry
turns out the same (`html_report._trial_view`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_skilleval.results.models import TrialEntry
    from pytest_skilleval.results.records import TrialRecord


class EntriesAhead:
    """`rules(skill_dir)`: the skill's grading mode and pass threshold, as the session's end plans the run."""

    def __init__(self, rules: Callable[[str], tuple[str, float]]) -> None:
        self._rules = rules

    def entry(self, record: TrialRecord) -> tuple[TrialEntry, float]:
        """The entry the session's end makes for this trial, and the pass threshold the report prints with it."""
        from pytest_skilleval.results.models import RunPlan
        from pytest_skilleval.results.trials import score_trial, trial_entry

        grading_mode, pass_threshold = self._rules(record.skill_dir)
        # Scoring reads only these two of the run's plan (the rest is the grid, coverage and provenance).
        plan = RunPlan.model_construct(grading_mode=grading_mode, pass_threshold=pass_threshold)
        return trial_entry(score_trial(record, plan)), pass_threshold
