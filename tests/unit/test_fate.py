"""Each trial's fate, decided once: reuse the resumed run's record, regrade a finished run's stored trial, skip an
attempt --stop-on-pass leaves out, or run."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilleval.harbor.fate import Regrade, Reuse, Run, Skip, StopOnPass, decide
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.skill.plan import TrialSpec

SOURCE = Path("/results/demo/20261201_000000_1_000000000000")


def _spec(attempt: int = 2, arm: str = "with_skill", case: str = "c1") -> TrialSpec:
    return TrialSpec(
        skill_dir=Path("/skills/demo"),
        skill_name="demo",
        case_id=case,
        source="dataset",
        agent="codex",
        arm=arm,
        attempt=attempt,
        nodeid=f"demo::{case}[codex-{arm}-{attempt}]",
    )


def _record(spec: TrialSpec, status: str = "scored", passed: bool | None = True) -> TrialRecord:
    return TrialRecord(
        skill="demo", case=spec.case_id, agent=spec.agent, arm=spec.arm, attempt=spec.attempt, status=status,
        overall=1.0 if passed else 0.0, passed=passed,
    )  # fmt: skip


def test_a_stored_record_is_reused_before_anything_else() -> None:
    stored = _record(_spec())
    assert decide(_spec(), stored, SOURCE, passed_at=1) == Reuse(stored)


def test_a_regraded_run_regrades_the_trial() -> None:
    assert decide(_spec(), None, SOURCE, passed_at=1) == Regrade(SOURCE)


def test_an_attempt_after_a_passing_one_is_skipped_with_its_reason() -> None:
    fate = decide(_spec(attempt=3), None, None, passed_at=2)
    assert isinstance(fate, Skip)
    record = fate.record
    assert (record.key, record.status, record.stopped_on_pass) == (_spec(attempt=3).key, "skipped", True)
    assert record.nodeid == _spec(attempt=3).nodeid
    assert record.reason == "--stop-on-pass: attempt 2 of this case already passed"


@pytest.mark.parametrize("passed_at", [None, 2, 3])
def test_otherwise_the_trial_runs(passed_at: int | None) -> None:
    assert decide(_spec(attempt=2), None, None, passed_at) == Run()


def test_stop_on_pass_remembers_the_first_passing_attempt_of_each_condition() -> None:
    tracker = StopOnPass()
    tracker.note(_spec(attempt=1), _record(_spec(attempt=1), passed=False))
    tracker.note(_spec(attempt=2, arm="without_skill"), _record(_spec(attempt=2), status="unscored", passed=None))
    assert tracker.passed_at(_spec()) is None and tracker.passed_at(_spec(arm="without_skill")) is None
    tracker.note(_spec(attempt=3), _record(_spec(attempt=3)))
    tracker.note(_spec(attempt=2), _record(_spec(attempt=2)))
    assert tracker.passed_at(_spec(attempt=4)) == 2
    assert tracker.passed_at(_spec(arm="without_skill")) is None and tracker.passed_at(_spec(case="c2")) is None
    assert tracker.skipped_record(_spec(attempt=2)) is None  # the passing attempt itself runs
    skipped = tracker.skipped_record(_spec(attempt=3))
    assert skipped is not None and skipped.stopped_on_pass
