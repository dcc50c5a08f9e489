"""`--regrade RUN_ID`: grade a finished run's stored trials again with today's host-side graders, 0 agent runs.

This is how a skill author iterates on grading: the agent phase is paid once, then the standard checks and the
judges run again on each trial's stored trajectory (`trajectory` in `<run>/<agent>/<arm>/trials/<case>.<n>.json`). The
author's custom grader needs the trial's workspace. A run made with `--harbor-keep-jobs` recorded it (the agent's
final /workspace, as a Harbor artifact, in the kept trial folder): while that folder exists, the trial is regraded
through Harbor's own regrade (a fresh sandbox holding the recorded workspace and trajectory, today's task, grader,
checks and judges). Otherwise the stored custom reward is kept as it was and the trial's details say so. Results go
to a new run folder that records where they came from.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_skilleval.harbor.runner import record_from_rich
from pytest_skilleval.harbor.staging import entry_document
from pytest_skilleval.harbor.verifier_adapter import RICH_REWARD_NAME, flat_rewards, grade_on_host
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.results.run_folder import TrialContent, read_trial
from pytest_skilleval.results.tree import trial_file, trial_folder
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings
from verifier.custom import SanitizedReward

CUSTOM_KEPT = "the custom grader was not re-run (the run kept no workspace); its stored reward is kept as it was"
CUSTOM_RERUN = "the custom grader was re-run on the trial's recorded workspace (kept by --harbor-keep-jobs)"
Rerun = Callable[[TrialSpec, Path], TrialRecord]


def _stored_custom(content: TrialContent, record: TrialRecord) -> SanitizedReward:
    rich: dict[str, Any] = content.rich_reward() or {}
    custom_details = rich.get("details", {}).get("custom", {}) if isinstance(rich.get("details"), dict) else {}
    return SanitizedReward(
        custom_metrics=record.custom_metrics,
        overall=rich.get("custom_overall"),
        details=custom_details.get("details", {}) if isinstance(custom_details, dict) else {},
        unscored_reason=custom_details.get("unscored_reason") if isinstance(custom_details, dict) else None,
    )


def kept_trial(stored: TrialRecord) -> Path | None:
    """The Harbor trial folder a --harbor-keep-jobs run left for this trial, while it still exists (pytest's temp
    folders rotate), with its result and recorded artifacts; Harbor's regrade checks the artifacts cover /workspace."""
    if not stored.trial_dir:
        return None
    path = Path(stored.trial_dir)
    if path.is_symlink() or not path.is_dir() or (path / "artifacts").is_symlink():
        return None
    return path if (path / "result.json").is_file() and (path / "artifacts").is_dir() else None


class Regrader:
    """Grades the stored trials of one source run into fresh records; the agent is never run."""

    def __init__(self, source_run: Path, work_dir: Path, rerun: Rerun | None = None) -> None:
        self.source_run = source_run
        self.work_dir = work_dir
        self.rerun = rerun

    def regrade(
        self, spec: TrialSpec, settings: RunSettings, judge: dict[str, Any] | None, has_grader: bool
    ) -> TrialRecord:
        stored_files = trial_file(self.source_run, spec.key), trial_folder(self.source_run, spec.key)
        content = TrialContent(read_trial(*stored_files) or {})
        base = dict(**spec.record_fields(), grading_mode=settings.grading_mode, source_run=None)
        raw = content.record()
        if raw is None:
            return TrialRecord(
                **base,
                status="error",
                error=f"--regrade: run {self.source_run.name} holds no stored trial for this item",
            )
        stored = TrialRecord.model_validate(raw)
        if stored.status in ("error", "skipped"):
            why = stored.error or stored.reason or stored.status
            return stored.model_copy(
                update={
                    "nodeid": spec.nodeid,
                    "source_run": None,
                    "reason": f"not regraded: the stored trial was {stored.status} ({why})",
                }
            )
        uses_grader = has_grader and settings.grading_mode in ("default_plus_custom", "custom_only")
        if uses_grader and self.rerun is not None and (kept := kept_trial(stored)) is not None:
            record = self.rerun(spec, kept)
            record.details["regrade"] = {"source_run": self.source_run.name, "custom_grader": CUSTOM_RERUN}
            return record.model_copy(update={"tokens": stored.tokens, "agent_seconds": stored.agent_seconds})
        work = (
            self.work_dir / spec.case_id / f"{spec.agent.replace(':', '_').replace('/', '_')}-{spec.arm}-{spec.attempt}"
        )
        shutil.rmtree(work, ignore_errors=True)
        (work / "agent").mkdir(parents=True)
        (work / "verifier").mkdir()
        trajectory = content.trajectory()
        if trajectory is not None:
            (work / "agent" / "trajectory.json").write_text(json.dumps(trajectory, ensure_ascii=False) + "\n")
        custom = _stored_custom(content, stored) if uses_grader else None
        entry = entry_document(spec, settings.grading_mode, has_grader)
        rich = asyncio.run(grade_on_host(work / "agent", entry, settings.grading_mode, judge, custom))
        rich["details"]["regrade"] = {
            "source_run": self.source_run.name,
            **({"custom_grader": CUSTOM_KEPT} if uses_grader else {}),
        }
        (work / "verifier" / RICH_REWARD_NAME).write_text(json.dumps(rich, indent=2, default=str) + "\n")
        (work / "verifier" / "reward.json").write_text(json.dumps(flat_rewards(rich), indent=2) + "\n")
        base.update(
            trial_dir=str(work),
            tokens=stored.tokens,
            agent_seconds=stored.agent_seconds,
            negative_control=stored.negative_control,
        )
        return record_from_rich(base, rich, settings.pass_threshold, None, work)
