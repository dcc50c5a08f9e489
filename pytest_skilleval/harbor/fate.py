"""Each trial's fate, decided once: run it, reuse the record a resumed run stored, regrade the stored trial of a
finished run, or skip it because an earlier attempt of its case already passed (--stop-on-pass).

The decision reads the plan's trial, the run this session continues (`--resume`) or grades again (`--regrade`), and
which attempts have passed so far; dispatch carries it out. A trial decided `Run` while an earlier attempt is still
in flight is checked once more when it is about to start (`StopOnPass.skipped_record`): one that has not started when
an earlier attempt passes becomes the same skipped record.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.results.triggering import TriggerRecord
from pytest_skilleval.skill.plan import TrialSpec


@dataclass(frozen=True)
class Run:
    """Run the trial (through the scheduler, or the conftest's runner)."""


@dataclass(frozen=True)
class Reuse:
    """A finished trial of the resumed run: its stored record (a case's, or a trigger item's), not run again."""

    record: TrialRecord | TriggerRecord


@dataclass(frozen=True)
class Regrade:
    """Grade the stored trial of this finished run again; the agent is not run."""

    source_run: Path


@dataclass(frozen=True)
class Skip:
    """Not run: an earlier attempt of the case already passed (--stop-on-pass)."""

    record: TrialRecord


Fate = Run | Reuse | Regrade | Skip


def decide(
    spec: TrialSpec, stored: TrialRecord | TriggerRecord | None, regrade_from: Path | None, passed_at: int | None
) -> Fate:
    """The trial's fate. `stored`: the resumed run's finished record of this trial (a case's or a trigger item's);
    `regrade_from`: the run --regrade grades again; `passed_at`: under --stop-on-pass, the first attempt of this case
    that passed (never for a trigger item: every attempt of a query runs, its rate is the measure)."""
    if stored is not None:
        return Reuse(stored)
    if regrade_from is not None:
        return Regrade(regrade_from)
    if passed_at is not None and passed_at < spec.attempt:
        return Skip(stopped_record(spec, passed_at))
    return Run()


def condition_key(spec: TrialSpec) -> tuple[Path, str, str, str]:
    """The skill and the trial's case, agent and arm: the attempts --stop-on-pass stops together."""
    return (spec.skill_dir, *spec.key.condition)


def stopped_record(spec: TrialSpec, passed_at: int) -> TrialRecord:
    """The skipped record of an attempt --stop-on-pass leaves out."""
    return TrialRecord(
        **spec.record_fields(),
        status="skipped",
        stopped_on_pass=True,
        reason=f"--stop-on-pass: attempt {passed_at} of this case already passed",
    )


class StopOnPass:
    """Which case/agent/arm conditions already have a passing attempt (thread-safe: the loop writes, pytest reads)."""

    def __init__(self) -> None:
        self._passed: dict[tuple[Path, str, str, str], int] = {}
        self._lock = threading.Lock()

    def note(self, spec: TrialSpec, record: TrialRecord) -> None:
        if record.passed and record.status == "scored":
            with self._lock:
                key = condition_key(spec)
                self._passed[key] = min(self._passed.get(key, spec.attempt), spec.attempt)

    def passed_at(self, spec: TrialSpec) -> int | None:
        """The first attempt of this trial's case, agent and arm that passed, or None."""
        with self._lock:
            return self._passed.get(condition_key(spec))

    def skipped_record(self, spec: TrialSpec) -> TrialRecord | None:
        """When the trial is about to start: its skipped record if an earlier attempt has passed by now, else None."""
        fate = decide(spec, None, None, self.passed_at(spec))
        return fate.record if isinstance(fate, Skip) else None
